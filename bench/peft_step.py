"""PyTorch + PEFT baseline for the planner benchmark (run on the GPU machine, where torch, transformers and
peft are installed; nothing is downloaded: the model is built from a config with random weights).

Times, on the same Qwen2.5 shapes as `npm run bench` (bench/shaped-model.ts; --shape 0.5b or 1.5b):
  - one LoRA training step (rank 16 on q,k,v,o,gate,up,down; frozen f16 base; forward, backward, AdamW) over
    a group of G sequences of T tokens, with the token-level policy-gradient loss the trainer's first step
    reduces to (ratio 1, so the clipped PPO term equals -A * logp);
  - greedy decode with the KV cache (HF generate), tokens/s.
Prints one JSON object on stdout, so the ratio to our WebGPU numbers is taken from two runs on one machine:

  python3 bench/peft_step.py --shape 0.5b --group 8 --tokens 512 --decode 64 > $OUT/peft.json

Where torch, transformers or peft is missing, or there is no CUDA device, it prints {"skipped": "<why>"} and exits 0
(`run.sh all` records the part as skipped).
"""

import argparse
import json
import sys
import time

# Must match QWEN25_05B in bench/shaped-model.ts.
QWEN25_05B = dict(
    vocab_size=151936,
    hidden_size=896,
    intermediate_size=4864,
    num_hidden_layers=24,
    num_attention_heads=14,
    num_key_value_heads=2,
    max_position_embeddings=32768,
    rms_norm_eps=1e-6,
    rope_theta=1000000.0,
    tie_word_embeddings=True,
)
# Must match QWEN25_15B in bench/shaped-model.ts.
QWEN25_15B = dict(
    QWEN25_05B,
    hidden_size=1536,
    intermediate_size=8960,
    num_hidden_layers=28,
    num_attention_heads=12,
    num_key_value_heads=2,
)
SHAPES = {"0.5b": QWEN25_05B, "1.5b": QWEN25_15B}
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def skip(why: str) -> None:
    """The baseline cannot run here: say why as this script's JSON, so a measuring call's record shows it."""
    print(json.dumps({"skipped": why}))
    sys.exit(0)


try:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen2Config, Qwen2ForCausalLM
except ImportError as e:
    skip(f"peft_step.py needs torch, transformers and peft: {e}")


def timed(fn, warmup: int, reps: int) -> float:
    """Mean seconds of fn() over reps runs after warmup runs, with the GPU drained around each timing."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / reps


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", choices=sorted(SHAPES), default="0.5b", help="Qwen2.5 shapes (bench/shaped-model.ts)")
    ap.add_argument("--group", type=int, default=8, help="sequences per training step (G)")
    ap.add_argument("--tokens", type=int, default=512, help="tokens per sequence (T)")
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--decode", type=int, default=64, help="new tokens for the decode timing")
    ap.add_argument("--prompt", type=int, default=128, help="prompt tokens for the decode timing")
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        skip("peft_step.py: no CUDA device (this baseline is for the GPU machine)")

    shape = SHAPES[a.shape]
    torch.manual_seed(0)
    dev = torch.device("cuda")
    t0 = time.perf_counter()
    # Built on the GPU: initialising 1.5B random weights on the CPU takes tens of seconds of a timed call.
    with dev:
        model = Qwen2ForCausalLM(Qwen2Config(**shape)).to(torch.float16)
    build_s = time.perf_counter() - t0
    model = get_peft_model(model, LoraConfig(r=a.rank, lora_alpha=2 * a.rank, lora_dropout=0.0, target_modules=TARGETS))
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)

    ids = torch.randint(0, shape["vocab_size"], (a.group, a.tokens), device=dev)
    adv = torch.randn(a.group, 1, device=dev)

    def step() -> None:
        logits = model(input_ids=ids).logits[:, :-1].float()
        logp = torch.log_softmax(logits, dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
        loss = -(adv * logp).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    torch.cuda.reset_peak_memory_stats()
    step_s = timed(step, warmup=2, reps=a.reps)
    train_peak = torch.cuda.max_memory_allocated()

    model.eval()
    prompt = ids[:1, : a.prompt]

    @torch.no_grad()
    def gen() -> None:
        model.generate(input_ids=prompt, max_new_tokens=a.decode, min_new_tokens=a.decode, do_sample=False)

    @torch.no_grad()
    def prefill_only() -> None:
        model.generate(input_ids=prompt, max_new_tokens=1, min_new_tokens=1, do_sample=False)

    gen_s = timed(gen, warmup=1, reps=a.reps)
    pre_s = timed(prefill_only, warmup=1, reps=a.reps)
    decode_tps = (a.decode - 1) / max(gen_s - pre_s, 1e-9)

    print(json.dumps({
        "framework": f"torch {torch.__version__} + peft (transformers Qwen2ForCausalLM, f16 base, eager)",
        "gpu": torch.cuda.get_device_name(0),
        "shape": f"Qwen2.5-{a.shape.upper()}",
        "buildSeconds": build_s,
        "group": a.group,
        "tokens": a.tokens,
        "rank": a.rank,
        "trainStepMs": step_s * 1000,
        "trainTokensPerSec": a.group * a.tokens / step_s,
        "trainPeakBytes": train_peak,
        "promptTokens": a.prompt,
        "prefillMs": pre_s * 1000,
        "decodeTokens": a.decode - 1,
        "decodeTokensPerSec": decode_tps,
    }, indent=2))


if __name__ == "__main__":
    main()
