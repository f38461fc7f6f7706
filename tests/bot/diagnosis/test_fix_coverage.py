"""Every built-in memory-error signature's own examples produce a fix, except the ones pinned here: their
examples print no number that sizes a fix and no number-free lever is sure to remove the failing term
(docs/benchmarks.md, bench/verify_fixes.py).  A signature that loses its fix, or gains one, fails here."""

from __future__ import annotations

from bot.core import GardenBot, Paste
from knowledge.loader import load_builtin
from knowledge.schema import MEMORY_CATEGORIES

# Why each one stays pinned (what was read; a fix here would be a number the paste does not give, or a
# command that could fail as printed).  sglang.req_slots_exhausted, once here, is fixed where the paste
# shows its cause (test_fix_sglang_dynamic_chunking.py says why the other paths get none).
NO_FIX_YET: set[str] = {
    # the message prints the dummy-request count only: how many fewer sequences fit needs the vocabulary
    # and the free memory, which it does not print; the reply lists the steps (signature advice)
    "vllm.gpu_oom.sampler_warmup",
    # a per-request rejection: the fix is a smaller input or a restart whose effect depends on the item
    # size vLLM profiles, which the message does not print; the reply lists both (signature advice)
    "vllm.context_exceeded.encoder_cache",
    # exllama's autosplit message prints no size at all (exllamav3 model_ls.py): how much shorter the
    # context or how much smaller the cache must be is unknowable from it; the reply lists the loader's
    # knobs (signature advice)
    "exllama.insufficient_vram_autosplit",
    # llama-server's "context shift is disabled" prints neither the slot's n_ctx nor the token count
    # (tools/server update_slots); the reply lists -c / -np, max_tokens and --context-shift (signature advice)
    "llamacpp.context_exceeded.generation",
    # SGLang's retract_decode assertion prints only the free slot count (0): how much smaller the context
    # or larger the pool must be needs max_total_num_tokens and --context-length, which it does not print;
    # the reply lists the steps (signature advice)
    "sglang.decode_oom.last_request",
    # LM Studio's n_keep >= n_ctx: the lever is the Context Length the model is loaded with, set in LM
    # Studio's load settings, so there is no command to print; the reply names the length (advice)
    "lmstudio.context_exceeded.n_keep",
    # llama-cpp-python's "Requested tokens (N) exceed context window of M": the lever is the constructor's
    # Llama(n_ctx=...), no command line; the reply lists it (signature advice)
    "llama_cpp_python.requested_tokens_exceed_n_ctx",
    # an OOM while vLLM loads the weights: the paste prints what this process holds (about the whole GPU,
    # since that is when it fails), not the model's size, so no tensor-parallel size or quantization can be
    # sized from it; the reply lists splitting and quantizing (signature advice)
    "vllm.gpu_oom.weight_loading",
    "vllm.gpu_oom.weight_loading_other_process",
    # an OOM in the memory profile: the message prints one allocation, not the activation peak per
    # batched token, so how many fewer tokens or sequences fit is unknown; the reply lists both (advice)
    "vllm.gpu_oom.profile_run",
    # a Vulkan buffer over the driver's one-buffer cap: the cap is the driver's (maxBufferSize), not a
    # budget, and free VRAM does not decide it, so no context or layer count can be sized from the paste;
    # the reply lists -ub / flash attention and quant / CPU placement (signature advice)
    "llamacpp.gpu_oom.vulkan_buffer_limit",
    # an OOM in TGI's warm-up: the message prints one allocation, not the activation peak of the prefill
    # batch nor the size of each CUDA graph, so how many fewer prefill tokens or graph sizes fit is unknown;
    # the reply lists --max-batch-prefill-tokens, --cuda-graphs and --num-shard (signature advice)
    "tgi.gpu_oom.warmup",
    # the shard's own tensors hold almost all memory in use (21.50 of 22.09 GiB), so another process is not
    # the answer; the prefill batch or total tokens that would fit are not printed; the reply says its own
    # work is too large and the cause lists --max-batch-prefill-tokens and --num-shard
    "tgi.shard_cuda_oom.v0",
    # an OOM while SGLang allocates its KV pool (one buffer per layer) or serves: the one allocation the
    # message names does not size the shortfall, so no --mem-fraction-static value can be computed; the
    # reply lists the fraction, --chunked-prefill-size and --max-running-requests (signature advice)
    "sglang.gpu_oom.pool_or_serving",
    # SGLang's "Prefill out of memory" prints the chunk's tokens and the pool's free ones, not the pool size
    # nor --chunked-prefill-size, so no smaller chunk or larger fraction can be sized; the reply lists the
    # chunk, --max-running-requests, the fraction and --page-size 1 (signature advice)
    "sglang.prefill_oom.crash",
    # vLLM's sleep-mode allocator prints no size (csrc/cumem_allocator.cpp: the CUresult only): what the
    # trainer holds is not in it; the reply lists the trainer's vLLM share and offloading (signature advice)
    "vllm.gpu_oom.sleep_mode_wake_up",
    # LMDeploy TurboMind's CUDA check prints the error and the source line, no size; the reply lists
    # --cache-max-entry-count, --session-len / --max-batch-size and a smaller model (signature advice)
    "lmdeploy.gpu_oom.turbomind_cuda_runtime",
    # torch_npu's OOM (Ascend) names one allocation on the NPU, not the engine's share nor which engine
    # holds it, and the CUDA levers would print nvidia-smi / PYTORCH_CUDA_ALLOC_CONF; the reply lists the
    # NPU's steps (npu-smi, PYTORCH_NPU_ALLOC_CONF, the engine's share) as signature advice
    "pytorch.npu_oom.v0",
    # TT-Metal's DRAM bank OOM prints bytes per bank, not the model's sequence length, batch or mesh, so no
    # setting can be sized from it; the reply lists more chips, less resident state and fragmentation (advice)
    "ttmetal.dram_oom",
    # PyTorch 2.13's caching-allocator warning fires before the allocator frees its cache and retries, so
    # the run may have gone on; it prints one cudaMalloc, not what the engine holds; the reply says to look
    # for the OutOfMemoryError that follows and lists headroom / other processes (signature advice)
    "pytorch.caching_allocator_oom_warning.v0",
    # torch_memory_saver prints the CUresult / cudaError code only, no size: what the trainer holds when the
    # rollout engine resumes is not in it; the reply lists the engine's share and offloading (advice)
    "sglang.memory_saver_oom",
    # llama_decode's "failed to find a memory slot" prints the batch, not -c, -np nor the tokens the running
    # requests hold, so no context or slot count can be sized from it; the reply lists -c / -np, max_tokens
    # and --swa-full (signature advice)
    "llamacpp.context_exceeded.kv_full",
    # the kernel's OOM-kill line, systemd's and Kubernetes' reasons name the process (at most its RSS), not
    # what the engine keeps in RAM nor the machine's or container's limit: nothing to size; the reply lists
    # journalctl, the container limit and less on the CPU (signature advice)
    "host.oom_killed",
    # Windows' error 1455 prints no size; the fix is the page file, set in System Properties, not a command
    "host.windows_commit_limit",
    # PyTorch's CPU allocator prints the one allocation refused, not what is in RAM nor the limit, and the
    # steps differ by OS (free / Task Manager, the page file, a container limit): advice
    "host.torch_cpu_allocator",
    # SGLang's unbalanced-memory check prints the free memory of two ranks, not what holds the rest nor
    # which GPU; the reply lists the process listing and equal / free GPUs (signature advice)
    "sglang.memory_capacity_unbalanced",
    # Triton's "Triton Error [CUDA]: out of memory" names no size and no engine share; the reply lists
    # headroom below the engine's share and a shorter context (signature advice)
    "pytorch.triton_cuda_oom",
}


def test_memory_errors_without_a_fix_are_only_the_pinned_ones():
    bot = GardenBot()
    without = set()
    for loaded in load_builtin().signatures:
        sig = loaded.signature
        if sig.category not in MEMORY_CATEGORIES or sig.category == "memory_report":
            continue
        replies = [bot.triage(Paste(ex.text, False, [])) for ex in sig.examples if ex.expect == "match"]
        if not any(r is not None and r.kind == "diagnosis" and r.fixes for r in replies):
            without.add(sig.id)
    assert without == NO_FIX_YET
