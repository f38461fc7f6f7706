"""The user's real command, read from a paste: a shell command line, never prose.

A command is a line that starts (after an optional shell prompt and ``VAR=value`` assignments) with a
known launcher (``vllm serve``, ``python -m vllm.entrypoints...``, ``llama-server``, ``ollama run``,
``python -m sglang.launch_server``, ``text-generation-launcher``, ``docker run ... <image>``), joined
across ``\\`` / ``^`` / backtick continuations and split with :mod:`shlex` so quotes survive.  A line
whose words after the launcher are not flags and their values (``vllm serve X dies on my 4090, any
idea?``) is prose and is not a command.  vLLM's Python API (``LLM(model=..., max_model_len=...)``) is
read as keyword arguments."""

from __future__ import annotations

import ast
import shlex
from dataclasses import dataclass, field

import re2

from calculator.commands import changed_argv, drop_flags, is_value

MAX_COMMAND_CHARS = 4000  # longer "commands" are log noise, not something a person typed

# prompts: "$ ", "# ", "> ", "PS C:\x> ", "(venv) user@host:~/dir$ ", "user@host:~# "
_PROMPT = r"(?:\([^()\n]{1,40}\) +)?(?:[A-Za-z0-9_.-]{1,40}@[A-Za-z0-9_.-]{1,60}:[^\n$#]{0,200}[$#] +|PS [^\n>]{1,200}> +|[$#>%] +)?"
_ENV = r"(?:(?:export +)?[A-Z_][A-Z0-9_]*=[^ \n]* +)*"
_LAUNCHER = (
    r"(?:sudo +)?(?:"
    r"(?:\S*[/\\])?vllm(?:\.exe)? +serve\b"
    r"|(?:\S*[/\\])?python[0-9.]*(?:\.exe)? +(?:-[A-Za-z] +)*-m +(?:vllm\.entrypoints\.[a-z_.]+|aphrodite\.[a-z_.]+|sglang\.launch_server|sglang\.[a-z_.]*server)\b"
    r"|(?:\S*[/\\])?aphrodite +run\b"
    r"|(?:\S*[/\\])?sglang +serve\b"
    r"|(?:\S*[/\\])?(?:llama-server|llama-cli|llama-run|llama-mtmd-cli|llama-bench|llama-perplexity|llamafile)(?:\.exe)?(?: |$)"
    r"|(?:\.[/\\]|\S*[/\\])(?:main|server)(?:\.exe)? +-"
    r"|ollama +(?:run|serve|create|pull)\b"
    r"|text-generation-launcher\b"
    r"|docker +run\b"
    r")"
)
# a command quoted as Markdown inline code, `bash vllm serve ...` included
_INLINE_CODE = r"(?:`(?:(?:ba)?sh +)?)?"
_COMMAND_START = re2.compile(r"(?m)^" + _INLINE_CODE + _PROMPT + "(" + _ENV + _LAUNCHER + r"[^\n]*)$")
_CONTINUED = ("\\", " ^", " `")
_PY_CALL = re2.compile(r"\bLLM\(([^()]*)\)")

ENGINE_OF_LAUNCHER = (
    ("sglang", ("sglang",)),
    ("vllm", ("vllm", "aphrodite")),
    ("ollama", ("ollama",)),
    ("tgi", ("text-generation-launcher",)),
    ("llama.cpp", ("llama-", "llamafile", "main", "server")),
)
# flags whose value is a secret or a path to one: never copied into a fix
SECRET_FLAGS = re2.compile(r"(?i)^--?[a-z0-9-]*(?:key|token|secret|password|passwd|auth)[a-z0-9-]*$")
ENGINE_ENV = re2.compile(
    r"^(?:CUDA_VISIBLE_DEVICES|HIP_VISIBLE_DEVICES|ROCR_VISIBLE_DEVICES|VLLM_[A-Z0-9_]*|OLLAMA_[A-Z0-9_]*|LLAMA_ARG_[A-Z0-9_]*|SGLANG_[A-Z0-9_]*|PYTORCH_CUDA_ALLOC_CONF|NCCL_[A-Z0-9_]*)="
)
_SECRET_ENV_NAME = re2.compile(r"(?i)(?:key|token|secret|password|passwd|auth)")


@dataclass
class Command:
    """A command line as the user ran it."""

    engine: str  # vllm | llama.cpp | ollama | sglang | tgi
    interface: str  # cli | python | docker
    env: list[str] = field(default_factory=list)  # VAR=value assignments in front
    argv: list[str] = field(default_factory=list)  # launcher and arguments (quotes removed)
    kwargs: dict[str, object] = field(default_factory=dict)  # LLM(...) keyword arguments
    line: int = -1

    def flag(self, *names: str) -> str | None:
        """The value of a flag in any spelling (``--f v``, ``--f=v``); ``""`` for a bare switch."""
        found: str | None = None
        for i, tok in enumerate(self.argv):
            name, eq, inline = tok.partition("=")
            if name in names:
                if eq:
                    found = inline
                elif i + 1 < len(self.argv) and is_value(self.argv[i + 1]):
                    found = self.argv[i + 1]
                else:
                    found = ""
        if found is None:
            for n in names:
                key = n.lstrip("-").replace("-", "_")
                if key in self.kwargs:
                    return str(self.kwargs[key])
        return found


def _engine(argv: list[str]) -> str | None:
    head = " ".join(argv[:4]).lower()
    for engine, markers in ENGINE_OF_LAUNCHER:
        if any(m in head for m in markers):
            return engine
    return None


def _launcher_len(argv: list[str]) -> int:
    """How many leading tokens name the program (``vllm serve``, ``python -m x``, ``ollama run``)."""
    if len(argv) >= 2 and argv[1] in ("serve", "run", "create", "pull"):
        return 2
    if argv and argv[0].rsplit("/", 1)[-1].startswith("python"):
        module = argv.index("-m", 1) if "-m" in argv[1:] else len(argv)
        return min(len(argv), module + 2)
    return 1


def _looks_like_arguments(argv: list[str], engine: str) -> bool:
    """After the launcher: at most one positional (the model; Ollama: model + a quoted prompt), and
    otherwise flags with their values.  Prose has many stray words."""
    rest = argv[_launcher_len(argv) :]
    positionals = 0
    i = 0
    while i < len(rest):
        tok = rest[i]
        if tok.startswith("-") and len(tok) > 1 and not is_value(tok):
            if "=" not in tok and i + 1 < len(rest) and is_value(rest[i + 1]):
                i += 1
        else:
            positionals += 1
        i += 1
    allowed = 2 if engine == "ollama" else 1
    return positionals <= allowed and not any(t.endswith(("?", "!")) for t in rest)


def _joined(lines: list[str], start: int) -> str:
    text = lines[start]
    i = start
    while text.rstrip().endswith(_CONTINUED) and i + 1 < len(lines) and len(text) < MAX_COMMAND_CHARS:
        text = text.rstrip()[:-1].rstrip() + " " + lines[i + 1].strip()
        i += 1
    return text


def _from_line(text: str, line_no: int) -> Command | None:
    m = _COMMAND_START.search(text)
    if m is None:
        return None
    body = m.group(1)
    if m.group(0).startswith("`") and body.endswith("`"):  # the closing backtick of inline code
        body = body[:-1]
    try:
        tokens = shlex.split(body.replace("\\", "/"), posix=True)  # Windows paths: C:\\m\\x.gguf
    except ValueError:  # an unclosed quote: the paste cut the command
        return None
    if not tokens:
        return None
    env: list[str] = []
    while tokens and re2.fullmatch(r"(?:export )?[A-Z_][A-Z0-9_]*=.*", tokens[0]):
        env.append(tokens.pop(0).removeprefix("export "))
    while tokens and tokens[0] in ("sudo", "export"):
        tokens.pop(0)
    if tokens and tokens[0] == "docker":
        image = next((i for i, t in enumerate(tokens) if "vllm" in t or "sglang" in t or "llama.cpp" in t
                      or "text-generation-inference" in t or t.startswith("ollama/")), None)  # fmt: skip
        if image is None:
            return None
        engine = _engine([tokens[image]]) or (
            "tgi" if "text-generation" in tokens[image] else "llama.cpp" if "llama" in tokens[image] else None
        )
        if engine is None:
            return None
        return Command(engine, "docker", env, tokens, line=line_no)
    engine = _engine(tokens)
    if engine is None or not _looks_like_arguments(tokens, engine):
        return None
    return Command(engine, "cli", env, tokens, line=line_no)


def _literal(node: ast.expr) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _python_call(text: str) -> Command | None:
    m = _PY_CALL.search(text)
    if m is None or len(m.group(1)) > MAX_COMMAND_CHARS:
        return None
    try:
        call = ast.parse("f(" + m.group(1) + ")", mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if not isinstance(call, ast.Call):
        return None
    kwargs: dict[str, object] = {}
    for kw in call.keywords:
        if kw.arg:
            value = _literal(kw.value)
            if value is not None:
                kwargs[kw.arg] = value
    if call.args and "model" not in kwargs:
        first = _literal(call.args[0])
        if isinstance(first, str):
            kwargs["model"] = first
    if not kwargs:
        return None
    return Command("vllm", "python", kwargs=kwargs)


def find_command(text: str) -> Command | None:
    """The last command the paste shows being run (the one that failed), else a ``LLM(...)`` call."""
    if len(text) > 4 * 1024 * 1024:
        text = text[-4 * 1024 * 1024 :]
    data = text.encode("utf-8", "surrogatepass")  # searched once as bytes; lines split at the first hit
    lines: list[str] = []
    found: Command | None = None
    line_no, pos = 0, 0
    for m in _COMMAND_START.finditer(data):
        line_no, pos = line_no + data.count(b"\n", pos, m.start()), m.start()
        lines = lines or text.split("\n")
        found = _from_line(_joined(lines, line_no)[:MAX_COMMAND_CHARS], line_no) or found
    return found or _python_call(text)


def render_env(env: list[str]) -> list[str]:
    """The assignments worth keeping in a fix: the engine's and CUDA's own, never a secret."""
    kept = []
    for assignment in env:
        name = assignment.split("=", 1)[0]
        if ENGINE_ENV.match(assignment) and not _SECRET_ENV_NAME.search(name.removeprefix("VLLM_")):
            kept.append(assignment)
    return kept


def without_secrets(argv: list[str]) -> list[str]:
    """``argv`` minus flags that carry a key or a token (and their values)."""
    return drop_flags(argv, lambda name: SECRET_FLAGS.match(name) is not None, set())


def _py_value(value: str) -> str:
    if value == "":
        return "True"
    if re2.fullmatch(r"-?[0-9]+(?:\.[0-9]+)?", value):
        return value
    return repr(value)


def render(
    command: Command,
    changes: dict[str, str | None],
    groups: list[tuple[str, ...]],
    switches: set[str],
    env_changes: dict[str, str] | None = None,
) -> str:
    """The user's command with each flag of ``changes`` set (``""`` a bare switch, ``None`` removed),
    every spelling of it replaced; secrets and unrelated environment assignments dropped."""
    if command.interface == "python":
        kwargs = {k: repr(v) for k, v in command.kwargs.items() if not SECRET_FLAGS.match("--" + k)}
        for flag, value in changes.items():
            key = flag.lstrip("-").replace("-", "_")
            if value is None:
                kwargs.pop(key, None)
            else:
                kwargs[key] = _py_value(value)
        return "LLM(" + ", ".join(f"{k}={v}" for k, v in kwargs.items()) + ")"
    argv = changed_argv(without_secrets(command.argv), changes, groups, switches)
    env = [e for e in render_env(command.env) if e.split("=", 1)[0] not in (env_changes or {})]
    env += [f"{k}={v}" for k, v in (env_changes or {}).items()]
    line = shlex.join(argv)
    for placeholder in ("<model>", "<model>.gguf"):
        line = line.replace(shlex.quote(placeholder), placeholder)  # placeholders are for a person to fill
    return " ".join([*env, line]) if env else line
