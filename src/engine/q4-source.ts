// A 4-bit weight source made in memory from MLC-named records (tests, benchmarks, or any producer that is
// not a tensor-cache.json folder): the same shape of input io/mlc's MlcCheckpoint gives the runtime.
import { f16BitsToF32 } from '../util/half';
import type { Qwen2Config } from '../io/qwen2-config';
import type { Q4WeightSource } from '../model/weights';

/**
 * `records` maps MLC names (`model.layers.0.self_attn.c_attn.q_weight`, `...c_attn.bias`, ...) to their
 * data: q_weight Uint32Array, q_scale and float records f16 bits (Uint16Array) or Float32Array.
 */
export function q4SourceFromRecords(config: Qwen2Config, quantization: 'q4f16_1' | 'q4f32_1', records: ReadonlyMap<string, Uint32Array | Uint16Array | Float32Array>): Q4WeightSource {
  const get = (name: string) => {
    const r = records.get(name);
    if (!r) throw new Error(`4-bit source: no record '${name}'`);
    return r;
  };
  return {
    quantization,
    config,
    raw: get,
    f32(name) {
      const r = get(name);
      if (r instanceof Float32Array) return r;
      if (r instanceof Uint16Array) return Float32Array.from(r, (b) => f16BitsToF32(b));
      throw new Error(`4-bit source: record '${name}' is not a float tensor`);
    },
  };
}
