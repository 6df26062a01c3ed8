import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkWeights, expectedQwen2Tensors, parseQwen2Config } from './qwen2-config.ts';
import { readSafetensors } from './safetensors.ts';
import { TINY, MLC_MANIFEST_05B } from './test-fixtures.ts';

const tinyJson = JSON.parse(readFileSync(join(TINY, 'config.json'), 'utf8'));

describe('parseQwen2Config', () => {
  it('reads the tiny fixture config', () => {
    expect(parseQwen2Config(tinyJson)).toEqual({
      hiddenSize: 64,
      numLayers: 2,
      numHeads: 4,
      numKvHeads: 2,
      headDim: 16,
      intermediateSize: 176,
      vocabSize: 320,
      ropeTheta: 1e6,
      rmsNormEps: 1e-6,
      tieWordEmbeddings: true,
      maxPositionEmbeddings: 512,
      bosTokenId: 318,
      eosTokenIds: [319],
      torchDtype: 'bfloat16',
    });
  });

  it("reads Qwen2.5-0.5B's real dimensions (from its MLC build's model_config) with a list of eos ids", () => {
    const mlc = JSON.parse(readFileSync(join(MLC_MANIFEST_05B, 'mlc-chat-config.json'), 'utf8'));
    const mc = mlc.model_config;
    const c = parseQwen2Config({
      model_type: 'qwen2', hidden_size: mc.hidden_size, num_hidden_layers: mc.num_hidden_layers, num_attention_heads: mc.num_attention_heads,
      num_key_value_heads: mc.num_key_value_heads, intermediate_size: mc.intermediate_size, vocab_size: mc.vocab_size,
      rope_theta: mc.rope_theta, rms_norm_eps: mc.rms_norm_eps, tie_word_embeddings: mc.tie_word_embeddings,
      eos_token_id: [151645, 151643], max_position_embeddings: 32768, torch_dtype: 'bfloat16',
    });
    expect(c.headDim).toBe(64);
    expect(c.numKvHeads).toBe(2);
    expect(c.eosTokenIds).toEqual([151645, 151643]);
    expect(c.bosTokenId).toBeNull();
  });

  it('names the field at fault', () => {
    expect(() => parseQwen2Config({ ...tinyJson, num_attention_heads: 5 })).toThrow(/'num_attention_heads' \(5\) must divide 'hidden_size' \(64\)/);
    expect(() => parseQwen2Config({ ...tinyJson, num_key_value_heads: 3 })).toThrow(/'num_key_value_heads' \(3\) must divide 'num_attention_heads' \(4\)/);
    expect(() => parseQwen2Config({ ...tinyJson, hidden_size: '64' })).toThrow(/config\.json: 'hidden_size' must be a positive integer/);
    expect(() => parseQwen2Config({ ...tinyJson, model_type: 'llama' })).toThrow(/'model_type' is "llama"/);
    expect(() => parseQwen2Config({ ...tinyJson, eos_token_id: 999 })).toThrow(/'eos_token_id' 999 is not a token id below vocab_size 320/);
    // 1e999 in a JSON file parses to Infinity, which JSON.stringify would print as null.
    const inf = (key: string) => JSON.parse(JSON.stringify({ ...tinyJson, [key]: 'X' }).replace('"X"', '1e999'));
    expect(() => parseQwen2Config(inf('rope_theta'))).toThrow(/'rope_theta' must be a finite positive number, got Infinity/);
    expect(() => parseQwen2Config(inf('num_hidden_layers'))).toThrow(/'num_hidden_layers' must be a positive integer, got Infinity/);
    const { vocab_size: _v, ...noVocab } = tinyJson;
    expect(() => parseQwen2Config(noVocab, 'my/config.json')).toThrow(/my\/config\.json: 'vocab_size'/);
  });
});

describe('checkWeights', () => {
  const st = readSafetensors(new Uint8Array(readFileSync(join(TINY, 'model.safetensors'))), 'model.safetensors');
  const descs = [...st.header.tensors.values()];

  it('accepts the fixture: exactly the expected Qwen2 tensors', () => {
    const cfg = parseQwen2Config(tinyJson);
    expect(() => checkWeights(cfg, descs)).not.toThrow();
    expect(new Set(expectedQwen2Tensors(cfg).keys())).toEqual(new Set(st.names()));
  });

  it('names the tensor, expected and actual shape when config and weights disagree', () => {
    const cfg = parseQwen2Config({ ...tinyJson, intermediate_size: 192 });
    expect(() => checkWeights(cfg, descs)).toThrow(/tensor 'model\.layers\.0\.mlp\.gate_proj\.weight' has shape \[176, 64\] but config\.json implies \[192, 64\]/);
    const kv = parseQwen2Config({ ...tinyJson, num_key_value_heads: 4 });
    expect(() => checkWeights(kv, descs)).toThrow(/'model\.layers\.0\.self_attn\.k_proj\.weight' has shape \[32, 64\] but config\.json implies \[64, 64\]/);
  });

  it('names missing tensors (untied config needs lm_head; a third layer is absent)', () => {
    expect(() => checkWeights(parseQwen2Config({ ...tinyJson, tie_word_embeddings: false }), descs)).toThrow(/missing .*lm_head\.weight/);
    const noNorm = descs.filter((d) => d.name !== 'model.layers.1.input_layernorm.weight');
    expect(() => checkWeights(parseQwen2Config(tinyJson), noNorm)).toThrow(/missing .*model\.layers\.1\.input_layernorm\.weight/);
  });

  it('a config with more layers than the weights hold fails naming both counts, before listing what it implies', () => {
    expect(() => checkWeights(parseQwen2Config({ ...tinyJson, num_hidden_layers: 3 }), descs)).toThrow(
      /config\.json says num_hidden_layers is 3 but the weights hold layers for 2 \(model\.layers\.0 to model\.layers\.1\): config and weights disagree/,
    );
    // Fifty million layers: the names it implies would be a 600-million-entry list (gigabytes, then a RangeError).
    expect(() => checkWeights(parseQwen2Config({ ...tinyJson, num_hidden_layers: 50_000_000 }), descs)).toThrow(/num_hidden_layers is 50000000 but the weights hold layers for 2/);
  });
});
