"""Turn a detection into a reply through a few generic diagnoses, chosen by the signature's form.

detect → read the situation (bot.situation) → the form for the root finding's category (or the
signature's own ``form``) → a neutral Reply whose fixes were each recomputed on the engine's budget."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from importlib import import_module

from bot.detector import Detection, Finding
from bot.reply import Reply
from bot.situation import read

# the categories each form answers (any other category: advice)
CATEGORIES_OF_FORM: dict[str, tuple[str, ...]] = {
    "capacity_short": ("kv_cache_too_small", "kv_alloc_failed", "context_exceeded",
                       "batched_tokens_too_small"),
    "budget_over": ("no_kv_memory", "gpu_oom", "host_memory", "gpu_memory_in_use"),
    "capability_below": ("dtype_unsupported", "quantization_unsupported", "gpu_unsupported",
                         "kv_quant_needs_flash_attn"),
    "constraint_violated": ("tp_divisibility", "max_len_exceeds_model", "invalid_argument"),
    "report": ("memory_report",),
    "wrapper": ("runner_crashed",),
}  # fmt: skip
FORM_OF_CATEGORY = {category: form for form, names in CATEGORIES_OF_FORM.items() for category in names}
# each form is the function of its name in bot/diagnosis/<module>.py (four modules are named for their
# subject), imported when a finding first needs it: a PyTorch OOM never loads capacity.py's KV search
MODULE_OF_FORM = {"capacity_short": "capacity", "budget_over": "over", "capability_below": "capability", "constraint_violated": "constraint"}  # fmt: skip
FORMS: dict[str, Callable[..., Reply]] = {}


def _function(name: str) -> Callable[..., Reply]:
    if name not in FORMS:
        FORMS[name] = getattr(import_module(f"bot.diagnosis.{MODULE_OF_FORM.get(name, name)}"), name)
    return FORMS[name]


def _quoted(text: str) -> Detection | None:
    """A launcher's quoted error detected again; None when it is unknown or another launcher's report."""
    from bot.detector import detect

    found = detect(text)
    return None if found.root is None or found.root.category == "runner_crashed" else found


def _inner(text: str, depth: int) -> Reply | None:
    return None if (found := _quoted(text)) is None else diagnose(found, depth)


def _cause_beside(root: Finding, findings: list[Finding]) -> Finding | None:
    """The engine's own error elsewhere in the paste, when a launcher's report quotes none we know."""
    if _form(root) != "wrapper" or _quoted(str(root.params.get("runner_error") or "")) is not None:
        return None  # not a launcher's report, or one the wrapper answers with the error it quoted
    return next((f for f in findings[1:] if f.severity == "error" and _form(f) != "wrapper"), None)


def _form(finding: Finding) -> str:
    return finding.form or FORM_OF_CATEGORY.get(finding.category, "advice")


def diagnose(detection: Detection, depth: int = 0) -> Reply | None:
    root = detection.root
    if root is None:
        return None
    if (cause := _cause_beside(root, detection.findings)) is not None:
        if found := diagnose(replace(detection, findings=[cause, *(f for f in detection.findings if f is not cause)])):  # fmt: skip
            found.notes.append("The launcher only reported that the engine stopped; this is the engine's error in the paste.")  # fmt: skip
        return found
    situation = read(detection, root)
    name = _form(root)
    form = _function(name)
    result = form(situation, _inner, depth) if name == "wrapper" else form(situation)
    result.signature = root.signature
    result.category = root.category
    result.engine = situation.engine
    # other failures only: the root's category is the same failure at another line, a wrapper reports it,
    # and a finding on the root's own lines is the same failure told by a more general signature
    own = range(root.line, root.line + len(root.evidence))
    others = [f for f in detection.findings[1:] if f.severity != "info" and f.category != root.category and _form(f) != "wrapper" and f.line not in own]  # fmt: skip
    if others := [f for f in others if f.title not in (root.title, result.title)]:
        result.notes.append("Also in the paste: " + "; ".join(f.title for f in others[:3]))
    return result


def fallback_reply(root: Finding) -> Reply:
    """The signature's own explanation, when a diagnosis failed on what the paste holds."""
    from bot.diagnosis.parts import fill

    return Reply(
        kind="diagnosis", title=root.title, summary=fill(root.cause_template, root.params) or root.title
    )
