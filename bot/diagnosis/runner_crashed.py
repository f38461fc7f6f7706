"""runner_crashed: Ollama's runner died; memory, an old build's context bug, a timeout or unknown."""

from __future__ import annotations

import re

from bot.diagnosis.common import diagnosis_reply
from bot.diagnosis.engine_facts import ollama_version
from bot.diagnosis.gguf import catalog_model, ollama_tag
from bot.diagnosis.ollama_runner import EXIT_CODES, ollama_log_fix, status_facts
from bot.diagnosis.runner_oom import runner_memory
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.commands import ollama_env_command

_MEMORY_TEXT = re.compile(
    r"out of memory|cudaMalloc failed|hipMalloc failed|unable to allocate|failed to allocate|allocation failed|"
    r"not enough memory|insufficient memory|OutOfDeviceMemory|erroroutofmemory|bad_alloc|signal: killed",
    re.IGNORECASE,
)


def runner_crashed(facts: PasteFacts) -> Reply:
    p = facts.params
    sig = facts.root.signature
    inner = str(p.get("runner_error") or "").strip()
    status = str(p.get("exit_status") or "").strip()
    if sig.endswith("timeout"):
        return _runner_timeout(facts)
    full = inner + " " + " ".join(facts.root.evidence)
    if _MEMORY_TEXT.search(inner) or (not inner and _MEMORY_TEXT.search(full)):
        return runner_memory(facts, inner, status)
    if re.search(r"failed to create context", inner, re.IGNORECASE):
        return _runner_create_context(facts, inner, status)
    return _runner_unknown(facts, inner, status)


def _runner_create_context(facts: PasteFacts, inner: str, status: str) -> Reply:
    tag = ollama_tag(facts, catalog_model(facts)) or facts.context.get("model")
    version = ollama_version(facts)
    old = version is None or version < (0, 3, 0)
    title = "Ollama: the runner crashed creating the context" + (f" for {tag}" if tag else "")
    title += " — upgrade Ollama first" if old else ""
    sentences = [
        "The runner loaded the weights and then failed to create the context"
        + (f", and Windows reported the abort as {status}" if status.lower() == "0xc0000409" else "")
        + ". No allocation error is quoted in front of it, so nothing here points to memory.",
    ]
    if old:
        sentences.append(
            "'llama runner process has terminated: … error:failed to create context' is how early Ollama releases "
            "(0.1/0.2) failed on model architectures they did not fully support — GLM-4/codegeex4 on 0.2.1 was a "
            "software bug fixed in the next release — so upgrade Ollama before touching memory settings."
        )
    else:
        sentences.append(
            "On a current release the log line before it says why: an allocation ('failed to allocate buffer for kv "
            "cache') means memory, anything else is a model/version problem."
        )
    numbers = status_facts(status)
    if tag:
        numbers.append(Fact("model", str(tag), "log"))
    if version:
        numbers.append(Fact("Ollama version", ".".join(map(str, version)), "log"))
    if facts.context.get("os"):
        numbers.append(Fact("OS", str(facts.context["os"]), "log"))
    fixes = [
        Fix(
            "ollama",
            "upgrade Ollama, then pull the model again",
            "ollama -v                          # the version you run\n"
            "# Windows/macOS: install the latest from https://ollama.com/download (or let the tray app update)\n"
            "# Linux: curl -fsSL https://ollama.com/install.sh | sh\n"
            f"ollama pull {tag or '<model>'}\nollama run {tag or '<model>'}",
            "a release that supports this model's architecture creates the context normally",
            "none",
            1,
        ),
        ollama_log_fix(2),
        Fix(
            "ollama",
            "only if the log then shows an allocation failure: a shorter context",
            ollama_env_command({"OLLAMA_CONTEXT_LENGTH": "2048"}, tag if isinstance(tag, str) else None),
            "a smaller KV cache; relevant only when the log says 'failed to allocate'",
            "shorter memory of the conversation",
            5,
        ),
    ]
    notes = [
        "Do not lower num_ctx or num_gpu for this one first: on the affected versions the same crash happens at "
        "any size.",
    ]
    if version is None:
        notes.append(
            "The Ollama version is not in the paste (ollama -v); the wording is from v0.1-v0.2 era builds."
        )
    data = {"cause": "create_context", "exit_status": status or None, "memory": False}
    return diagnosis_reply(
        title,
        " ".join(sentences),
        numbers,
        fixes,
        notes,
        "The runner failed to create the context: a version/model-support bug, not memory — upgrade first.",
        data=data,
    )


def _runner_unknown(facts: PasteFacts, inner: str, status: str) -> Reply:
    tag = ollama_tag(facts, catalog_model(facts))
    stopped = facts.root.signature.endswith("unexpectedly_stopped")
    title = "Ollama: the model runner stopped" + (f" (exit status {status})" if status else "")
    meaning = EXIT_CODES.get(status.lower()) if status else None
    sentences = []
    if stopped:
        sentences.append(
            "The runner died after the model was loaded, while it was working on a request. Ollama's message "
            "names 'resource limitations' as the usual reason — most often memory when a long prompt grows the "
            "KV cache in use and the compute buffer — but the message itself does not say which."
        )
    else:
        sentences.append(
            "The runner (the llama.cpp process holding the model) exited"
            + (f" with status {status}" if status else "")
            + (f" — {meaning}" if meaning else "")
            + "."
        )
    if inner:
        sentences.append(
            f"Its last words were '{inner[:160]}', which is not an allocation failure; the server log has the lines "
            "that decide it."
        )
    else:
        sentences.append(
            "The paste does not include the runner's own error, so only the server log can tell memory from a bug."
        )
    numbers = status_facts(status)
    if inner:
        numbers.append(Fact("runner error", inner[:200], "log"))
    fixes = [ollama_log_fix(1)]
    fixes.append(
        Fix(
            "ollama",
            "check the version",
            "ollama -v",
            "crashes without an allocation error are often fixed in a newer release (new model architectures, "
            "driver support)",
            "",
            2,
        )
    )
    if stopped:
        fixes.append(
            Fix(
                "ollama",
                "if it happens on long prompts: a shorter context",
                ollama_env_command({"OLLAMA_CONTEXT_LENGTH": "4096"}, tag),
                "bounds the KV cache and compute buffer a request can grow to",
                "less conversation memory",
                3,
            )
        )
    notes = []
    if status.lower() == "0xc0000409":
        notes.append("0xc0000409 on Windows is an abort code, not 'out of memory'; the quoted error decides.")
    data = {"cause": "unknown", "exit_status": status or None, "runner_error": inner or None}
    return diagnosis_reply(
        title,
        " ".join(sentences),
        numbers,
        fixes,
        notes,
        "The runner stopped; the paste does not say why — the server log does.",
        data=data,
    )


def _runner_timeout(facts: PasteFacts) -> Reply:
    p = facts.params
    progress = p.get("load_progress")
    try:
        prog = float(progress) if progress is not None else None
    except ValueError:
        prog = None
    tag = ollama_tag(facts, catalog_model(facts))
    title = "Ollama: the runner did not finish loading in time" + (
        f" (progress {prog:.0%})" if prog is not None else ""
    )
    if prog is not None and prog == 0:
        cause = (
            "Loading never started (progress 0%): the runner hung before reading weights — usually GPU "
            "initialisation (driver, a second GPU runtime) or a model file on a very slow or network disk."
        )
    else:
        cause = (
            "Loading was progressing too slowly: Ollama gives up after OLLAMA_LOAD_TIMEOUT (5 minutes without "
            "progress). That means a slow disk, or a machine that is swapping because model + context do not fit "
            "in RAM."
        )
    numbers = [Fact("load progress", f"{prog:.0%}", "log")] if prog is not None else []
    fixes = [
        Fix(
            "ollama",
            "check RAM while it loads",
            "free -h; vmstat 1 5     # 'si'/'so' above 0 = swapping",
            "if it swaps, the model does not fit in RAM: a smaller quant or a shorter context",
            "",
            1,
        ),
        Fix(
            "ollama",
            "give slow disks more time",
            ollama_env_command({"OLLAMA_LOAD_TIMEOUT": "15m"}, tag),
            "waits 15 minutes without progress instead of 5 (if ollama serve --help lists it in your version)",
            "does not help a machine that is swapping",
            2,
        ),
        ollama_log_fix(3),
    ]
    data = {"cause": "timeout", "load_progress": prog}
    return diagnosis_reply(title, cause, numbers, fixes, [], data=data)


RULES = {"runner_crashed": runner_crashed}
