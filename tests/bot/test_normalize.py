"""Normalisation: prefixes, ANSI, wrapping; and the proof that its line patterns cannot backtrack."""

from __future__ import annotations

import re
from re import _parser as sre_parse  # the stdlib's own regex parser

import pytest

from bot import normalize as N
from bot import unwrap

# --- linear time, structurally: every quantifier in the Python-re patterns is possessive or tiny ----

_BOUNDED_MAX = 64


def _lines(norm: N.Normalized) -> tuple[str, ...]:
    """The cleaned physical lines: the plain view, split."""
    return tuple(norm.views[0].text.split("\n"))


def _walk(parsed):
    for op, av in parsed:
        name = str(op)
        if name in ("MAX_REPEAT", "MIN_REPEAT"):
            _lo, hi, body = av
            yield ("repeat", hi)
            yield from _walk(body)
        elif name == "POSSESSIVE_REPEAT":
            _lo, _hi, body = av
            yield ("possessive", None)
            yield from _walk(body)
        elif name == "SUBPATTERN":
            yield from _walk(av[-1])
        elif name == "BRANCH":
            for branch in av[1]:
                yield from _walk(branch)
        elif name == "ATOMIC_GROUP":
            yield from _walk(av)


PY_PATTERNS = [
    *N.PREFIX_PATTERNS,
    N._PREFIX_M.pattern,
    N._IDENT.pattern,
    N._NUMBERED.pattern,
    N._RECORD_START.pattern,
    unwrap._ITEM.pattern,
]


@pytest.mark.parametrize("pattern", PY_PATTERNS)
def test_python_re_patterns_never_backtrack(pattern):
    """A greedy quantifier with an unbounded (or large) maximum could backtrack; possessive ones cannot,
    so each line costs at most (alternatives x its length): linear in the paste."""
    for kind, hi in _walk(sre_parse.parse(pattern)):
        if kind == "repeat":
            assert hi <= _BOUNDED_MAX, f"non-possessive quantifier up to {hi} in {pattern!r}"


# --- behaviour ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "rest"),
    [
        ("INFO 04-12 08:21:19 [worker.py:267] model weights take", "model weights take"),
        ("(VllmWorker rank=3 pid=1090) INFO 04-12 08:21:19 [worker.py:267] x", "x"),
        ("(EngineCore_DP0 pid=1133552) ERROR 10-03 16:22:17 [core.py:1] boom", "boom"),
        ("RayWorkerWrapper pid=1861983) INFO 03-27 10:29:03 [model_runner.py:1442] y", "y"),
        ("vllm-1  | ERROR 11-18 18:07:28 engine.py:366] ValueError: z", "ValueError: z"),
        (
            "Aug 08 23:02:37 j-360 ollama[1617]: time=2025-08-08T23:02:37.145+01:00 level=INFO source=server.go:135 msg=x",
            "msg=x",
        ),
        ("[2025-07-02 07:41:58 DP0 TP0] Load weight end.", "Load weight end."),
        ("[rank0]: torch.OutOfMemoryError: CUDA", "torch.OutOfMemoryError: CUDA"),
        ("  | [2025-03-10T15:07:20Z] ERROR 03-10 08:07:20 [core.py:302] EngineCore hit", "EngineCore hit"),
        (
            "1.06.520.077 E ggml_backend_cuda_buffer_type_alloc_buffer: allocating",
            "ggml_backend_cuda_buffer_type_alloc_buffer: allocating",
        ),
        ("2024-01-22 14:32:27 | ERROR | stderr | Traceback", "Traceback"),
        ("[llama-cpp] | Exception: Requested tokens", "Exception: Requested tokens"),
        ("INFO:       Total GPU memory: 47.53 GiB", "Total GPU memory: 47.53 GiB"),
        # launchers and platforms that re-prefix the engine's lines (lines from real threads)
        (  # Lemonade (lemonade-sdk/vllm-rocm#5)
            "2026-06-09 14:01:52.982 [Error] (Process) (EngineCore pid=42521) ERROR 06-09 14:01:52 [core.py:1136] ValueError: To",
            "ValueError: To",
        ),
        (  # Lemonade in Docker with docker logs -t and llama.cpp's own timestamp (lemonade-sdk/lemonade#2879)
            "2026-08-02T18:00:30.700305461Z [lemonade-server-app-1] 2026-08-02 18:00:30.700 [Info] (Process) "
            "0.04.413.360 E llama_model_load_from_file_impl: failed to load model",
            "llama_model_load_from_file_impl: failed to load model",
        ),
        (  # Lemonade under systemd (lemonade-sdk/lemonade#1804)
            "May 05 17:05:54 foundry lemond[1726173]: 2026-05-05 17:05:54.280 [Debug] (Server) No tools in request",
            "No tools in request",
        ),
        (  # LocalAI's gRPC backend relay (mudler/LocalAI#1729)
            "3:44PM DBG GRPC(5c7cd056ecf9a4bb5b527410b97f48cb-127.0.0.1:44793): stderr llm_load_print_meta: rope type        = 0",
            "llm_load_print_meta: rope type        = 0",
        ),
        (  # LocalAI's backend fallback loop (mudler/LocalAI#5339): the backend tag is kept, signatures read it
            "9:01PM ERR [llama-cpp] Failed loading model, trying with fallback 'llama-cpp-fallback', error: x",
            "[llama-cpp] Failed loading model, trying with fallback 'llama-cpp-fallback', error: x",
        ),
        (  # a compose replica in brackets is a prefix
            "[lemonade-server-app-1] ERROR: x",
            "x",
        ),
        (  # Google Cloud Logging copy with vLLM's relative logger path (vllm-project/vllm#29049)
            "INFO 2025-11-19T20:16:36.096638074Z [resource.labels.containerName: vllm] (EngineCore_DP0 pid=270) "
            "ERROR 11-19 12:16:36 [v1/engine/core.py:842] torch.OutOfMemoryError: CUDA out of memory.",
            "torch.OutOfMemoryError: CUDA out of memory.",
        ),
        (  # Home Assistant's Ollama integration (home-assistant/core#139085)
            "2025-02-22 17:06:31.627 ERROR (MainThread) [homeassistant.components.ollama.conversation] Unexpected error",
            "Unexpected error",
        ),
        (  # journald in a lower-case locale (ollama/ollama#2187)
            'dec 08 18:05:36 rig2 ollama[19103]: time=2024-12-08T18:05:36.508+02:00 level=DEBUG source=memory.go:330 msg="x"',
            'msg="x"',
        ),
        (
            "(Worker_TP0_EP0 pid=1707110) ERROR 11-29 20:52:18 [multiproc_executor.py:597] RuntimeError: x",
            "RuntimeError: x",
        ),
        (
            "(Worker_PP1_TP0 pid=583) WARNING 01-28 00:18:18 [multiproc_executor.py:786] WorkerProc",
            "WorkerProc",
        ),
        # log shippers (bench/prefix_recall.py measures them on the held-out pastes)
        (  # the CRI log file, kubelet's own example (kubernetes/kubernetes pkg/kubelet/kuberuntime/logs/logs.go)
            "2016-10-06T00:17:09.669794202Z stdout P log content 1",
            "log content 1",
        ),
        (
            "2016-10-06T00:17:09.669794203Z stderr F log content 2",
            "log content 2",
        ),
        (  # kubectl logs --prefix (kubernetes/kubectl pkg/cmd/logs/logs.go "[pod/%s/%s] ") around vLLM's uvicorn
            '[pod/vllm-qwen-68c5644b78-r8cnl/vllm-qwen] INFO:     10.1.39.21:40202 - "POST /v1/completions HTTP/1.1" 200 OK',
            '10.1.39.21:40202 - "POST /v1/completions HTTP/1.1" 200 OK',
        ),
        (  # kubectl logs --prefix --timestamps: the prefix goes in front of the kubelet's stamp
            "[pod/vllm-0/vllm] 2025-11-19T20:16:36.096638074Z (EngineCore_DP0 pid=270) ERROR 11-19 12:16:36 "
            "[v1/engine/core.py:842] torch.OutOfMemoryError: CUDA out of memory.",
            "torch.OutOfMemoryError: CUDA out of memory.",
        ),
        (  # journalctl -o short-iso, before and after systemd v255 (systemd/systemd#29134)
            "2023-09-08T17:20:30+0200 tarta r710_fan_controller.sh[20911]: Highest drive temperature: 43 Celcius.",
            "Highest drive temperature: 43 Celcius.",
        ),
        (  # -o short-iso-precise with the RFC 3339 offset (systemd/systemd#29134)
            "2023-09-08T17:20:30.655028+02:00 tarta r710_fan_controller.sh[20911]: Highest drive temperature: 43 Celcius.",
            "Highest drive temperature: 43 Celcius.",
        ),
        (  # journalctl -o short-precise (bottlerocket-os/bottlerocket#2900)
            "Mar 14 10:12:31.545088 localhost kernel: Using GB pages for direct mapping",
            "Using GB pages for direct mapping",
        ),
        (  # GitLab Runner job-log timestamps (docs.gitlab.com ci/yaml/ci_job_log_timestamps), "+" appends
            "2026-05-08T09:28:43.725057Z 00O Running with gitlab-runner 18.11.1 (5265d41d)",
            "Running with gitlab-runner 18.11.1 (5265d41d)",
        ),
        (
            '2026-05-08T09:28:43.725057Z 00O+Preparing the "shell" executor',
            'Preparing the "shell" executor',
        ),
        (  # GitHub Actions raw log: the runner's stamp, then an annotation marker
            "2025-07-02T07:41:58.1234567Z ##[error]Process completed with exit code 1.",
            "Process completed with exit code 1.",
        ),
        (  # docker logs -t (RFC3339NanoFixed and a space) on a vLLM logger line (vllm-project/vllm#3161)
            "2024-03-02T23:59:21.000000000Z INFO 03-02 23:59:21 api_server.py:240] vLLM API server version 0.3.3",
            "vLLM API server version 0.3.3",
        ),
        (  # Grafana's log download (public/app/features/inspector/utils/download.ts: ISO stamp + tab)
            "2025-07-02T09:41:58+02:00\tINFO 07-02 07:41:58 [worker.py:267] model weights take 14.99GiB",
            "model weights take 14.99GiB",
        ),
    ],
)
def test_prefixes_stripped(line, rest):
    norm = N.normalize(line)
    assert _lines(norm)[0] == rest


@pytest.mark.parametrize(
    ("line", "rest"),
    [
        # TGI's tracing line: an RFC 3339 stamp, a level and a target: not journalctl -o short-iso (which
        # never prints "Z"), so "text_generation_launcher:" stays for the signatures
        (
            "2023-09-26T21:48:00.969072Z ERROR text_generation_launcher: Method Warmup encountered an error.",
            "text_generation_launcher: Method Warmup encountered an error.",
        ),
        # a vLLM message wrapped at its number, and nvidia-smi's list: a leading number is text
        (
            "22.5 GiB KV cache is needed, which is larger than the available KV cache memory (17.39 GiB).",
            "22.5 GiB KV cache is needed, which is larger than the available KV cache memory (17.39 GiB).",
        ),
        ("0: NVIDIA GeForce RTX 5070 Ti 16303MiB", "0: NVIDIA GeForce RTX 5070 Ti 16303MiB"),
        # a pod reference inside a message, an annotation marker mid-line: only line starts are prefixes
        (
            "Back-off restarting failed container [pod/vllm-0/vllm] x",
            "Back-off restarting failed container [pod/vllm-0/vllm] x",
        ),
        ("Process ##[error]x", "Process ##[error]x"),
        # a CRI stream word without the kubelet's stamp is the message's own
        ("stderr F log content", "stderr F log content"),
    ],
)
def test_lookalike_prefixes_kept(line, rest):
    assert _lines(N.normalize(line))[0] == rest


def test_ansi_with_lost_escape_byte():
    norm = N.normalize("[34m1.14.608.510[0m [32mI [0mllama_context: n_ctx = 64000")
    assert _lines(norm)[0] == "llama_context: n_ctx = 64000"


def test_hard_wrap_mid_word_is_rejoined():
    text = (
        "(EngineCore pid=316) ValueError: To serve at least one request with the model's max seq len (100000), (4.26 GiB KV cach\n"
        "e is needed, which is larger than the available KV cache memory (4.25 GiB)."
    )
    norm = N.normalize(text)
    assert any("KV cache is needed" in v.text for v in norm.views)


def test_reflowed_sentence_is_rejoined_with_space():
    text = "ValueError: To serve at least one request with the model's max seq len (1048576),\n22.5 GiB KV cache is needed, which is larger"
    norm = N.normalize(text)
    assert any("(1048576), 22.5 GiB" in v.text for v in norm.views)


def test_traceback_lines_are_not_joined():
    text = "x" * 90 + '\n  File "/x.py", line 1, in f\nValueError: boom'
    assert len(N.normalize(text).views) == 1


def test_invisible_and_lookalike_characters():
    norm = N.normalize("max\u200b seq len (\uff11\uff13\uff11\uff10\uff17\uff12)\x00")
    assert _lines(norm)[0] == "max seq len (131072)"


def test_decimal_comma_and_thousands_numbers():
    from bot.numbers import parse_number, parse_token_count

    assert parse_number("42,656") == 42656
    assert parse_number("1900,00") == 1900.0
    assert parse_number("0.90") == 0.9
    assert parse_number("99999999999999999999") is None
    assert parse_number("-3") is None and parse_number("nan") is None
    assert parse_token_count("32k") == 32000 and parse_token_count("32K") == 32768


def test_python_re_compiles_possessive():
    assert re.compile(N._PREFIX_M.pattern)


# --- pastes wrapped by other tools (bot/unwrap.py) ----------------------------------------------------


def test_windows_console_arrow_ansi():
    text = (
        "\u2190[1;36m(EngineCore_DP0 pid=5)\u2190[0;0m INFO 10-01 10:00:00 [gpu_worker.py:400] Estimated CUDA graph memory: 1.25 GiB total\n"
        "\u2190[1;36m(EngineCore_DP0 pid=5)\u2190[0;0m ERROR 10-01 10:00:01 [core.py:1] ValueError: No available memory for the cache blocks."
    )
    assert _lines(N.normalize(text)) == (
        "Estimated CUDA graph memory: 1.25 GiB total",
        "ValueError: No available memory for the cache blocks.",
    )


def test_a_single_arrow_in_text_is_kept():
    assert _lines(N.normalize("layers 0 \u2190 31 moved")) == ("layers 0 \u2190 31 moved",)


# a quote quoted again (a reply to a quoted paste, an e-mail reply) has one bar per level
@pytest.mark.parametrize("bar", ["\u258e ", "> ", "> > ", ">> ", "\u258e > "])
def test_chat_quote_bars_removed(bar):
    text = f"{bar}ValueError: No available memory for the cache blocks.\n{bar}Try increasing `gpu_memory_utilization`"
    assert _lines(N.normalize(text)) == (
        "ValueError: No available memory for the cache blocks.",
        "Try increasing `gpu_memory_utilization`",
    )


def test_a_shell_prompt_line_is_not_a_quote_bar():
    text = "> ollama run qwen3\nError: 500 Internal Server Error: memory layout cannot be allocated"
    assert _lines(N.normalize(text))[0] == "> ollama run qwen3"


def test_glued_records_are_split():
    text = (
        "ValueError: No available memory for the cache blocks. See docs for more details."
        "(Worker_PP6 pid=583) WARNING 01-28 00:18:18 [multiproc_executor.py:786] WorkerProc was terminated "
        "(Worker_PP1 pid=578) WARNING 01-28 00:18:18 [multiproc_executor.py:786] WorkerProc was terminated"
    )
    assert _lines(N.normalize(text)) == (
        "ValueError: No available memory for the cache blocks. See docs for more details.",
        "WorkerProc was terminated",
        "WorkerProc was terminated",
    )


@pytest.mark.parametrize(
    "line",
    [
        "vllm-1  | (EngineCore_DP0 pid=3) ERROR 11-18 18:07:28 [core.py:1] ValueError: x",
        "  | [2025-03-10T15:07:20Z] ERROR 03-10 08:07:20 [core.py:302] ValueError: x",
        "(EngineCore_DP0 pid=270) ERROR 11-19 12:16:36 [core.py:842] ValueError: x",
        # a shipper's stamp (and stream tag) in front of a vLLM worker's line: docker logs -t / kubectl
        # --timestamps, the CRI file, GitLab's job-log timestamps, an RFC 3339 offset
        "2025-11-19T20:16:36.096638074Z (EngineCore_DP0 pid=270) ERROR 11-19 12:16:36 [core.py:842] ValueError: x",
        "2025-11-19T20:16:36.096638074Z stderr F (EngineCore_DP0 pid=270) ERROR 11-19 12:16:36 [core.py:842] ValueError: x",
        "2025-11-19T20:16:36.096638Z 01E (EngineCore_DP0 pid=270) ERROR 11-19 12:16:36 [core.py:842] ValueError: x",
        "2025-11-19T21:16:36+01:00 (EngineCore_DP0 pid=270) ERROR 11-19 12:16:36 [core.py:842] ValueError: x",
    ],
)
def test_stacked_prefixes_are_not_split(line):
    assert _lines(N.normalize(line)) == ("ValueError: x",)


def test_a_record_glued_after_a_message_ending_in_a_time_is_still_split():
    """Only a stamp with a shipper's shape is kept whole: a message's own last number is not one."""
    text = "Waited 30 (EngineCore_DP0 pid=270) ERROR 11-19 12:16:36 [core.py:842] ValueError: x"
    assert _lines(N.normalize(text)) == ("Waited 30", "ValueError: x")


_CRI_STAMP = "2016-10-06T00:17:09.669794202Z"  # kubelet's parseCRILog example (pkg/kubelet/kuberuntime/logs)


def test_cri_partial_pieces_are_one_line_again():
    """A line longer than the runtime's buffer is written as "P" pieces and a last "F" one, each with
    its own stamp: the pieces are joined (nothing between them), the next record stays its own line."""
    text = (
        f"{_CRI_STAMP} stderr P torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 Gi\n"
        f"{_CRI_STAMP} stderr P B. GPU 6 has a total capacity of 139.80 GiB of which 1003.\n"
        f"{_CRI_STAMP} stderr F 31 MiB is free.\n"
        f"{_CRI_STAMP} stdout F INFO 05-18 14:27:49 [api_server.py:1] next"
    )
    assert _lines(N.normalize(text)) == (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU 6 has a total capacity "
        "of 139.80 GiB of which 1003.31 MiB is free.",
        "next",
    )


@pytest.mark.parametrize(
    "text",
    [
        # the other stream's line between a piece and the rest: the runtime writes each stream on its own
        f"{_CRI_STAMP} stdout P log cont\n{_CRI_STAMP} stderr F other stream\n{_CRI_STAMP} stdout F ent",
        # a piece whose rest was not pasted, and a full line after a full line
        f"{_CRI_STAMP} stdout F log content\n{_CRI_STAMP} stdout F next\n{_CRI_STAMP} stdout P cut",
    ],
)
def test_cri_pieces_join_only_their_own_stream(text):
    assert len(_lines(N.normalize(text))) == 3


def test_cloudwatch_doubled_lines_collapse():
    text = (
        "2025-05-02T10:11:12.345Z    ValueError: No available memory for the cache blocks.\n"
        "ValueError: No available memory for the cache blocks.\n"
        "2025-05-02T10:11:13.001Z    next line\n"
        "next line"
    )
    assert _lines(N.normalize(text)) == ("ValueError: No available memory for the cache blocks.", "next line")


def test_number_cut_by_a_fixed_width_wrap_is_rejoined():
    from bot.detector import detect

    text = (
        "(EngineCore pid=316) ValueError: To serve at least one request with the model's max seq len (1000\n"
        "00), (4.26 GiB KV cache is needed, which is larger than the available KV cache memory (4.25 GiB)."
    )
    finding = detect(text).findings[0]
    assert finding.signature == "vllm.kv_cache_too_small.v1"
    assert finding.params["max_model_len"] == 100000
    assert finding.params["kv_cache_gib"] == 4.25


def test_clean_ascii_text_is_returned_untouched():
    text = "INFO 04-12 08:21:19 [worker.py:267] Model loading took 14.99 GiB\n"
    assert N.visible(text) is text


def test_ansi_pass_is_one_pass_with_or_without_the_escape_byte():
    # the escape sequence goes; what it leaves behind is not re-read as a lost-escape sequence
    assert N.visible("[3\x1b[0m4m x") == "[34m x"
    assert N.visible("[34mred[0m") == "red"
    assert N.visible("\x1b[31mred\x1b[0m [1;32mgreen") == "red green"


def test_prefixes_only_at_line_starts():
    assert N.strip_prefixes("foo [rank0]: x\n[rank0]: y") == "foo [rank0]: x\n\x02y"
    assert N.strip_prefixes("[rank0]: x\n\n[rank1]: y") == "\x02x\n\n\x02y"


def test_line_offsets_in_non_ascii_text():
    norm = N.normalize("é → INFO 04-12 08:21:19 [worker.py:267] a\n[rank0]: ①② b\nplain")
    view = norm.views[0]
    assert _lines(norm) == ("é → INFO 04-12 08:21:19 [worker.py:267] a", "12 b", "plain")
    assert list(view.byte_starts) == [0, 45, 50]
    assert view.line_at(44) == 0 and view.line_at(45) == 1 and view.line_at(51) == 2
    assert [view.logical_line(i) for i in range(3)] == list(_lines(norm))


def test_surrogates_and_invisible_characters_in_non_ascii_text():
    assert N.clean_text("a\u200bb\ud800c é") == "ab\ufffdc é"
    assert N.clean_text("x\r\ny\rz\tw") == "x\ny\nz    w"


def _record_start_reference(line: str) -> bool:
    """Whether a line starts a record, as it was written before it became one regex (normalize._RECORD_START)."""
    if line[0] in N._RECORD_CHARS or line.startswith(N._RECORD_WORDS):
        return True
    m = N._IDENT.match(line)
    if m is not None:
        word, after = m.group(), line[m.end() : m.end() + 2]
        if word.endswith(("Error", "Exception", "Warning", "Exit")):
            return True
        if (after == ": " and word.islower()) or after[:1] == "=":
            return True
    return N._NUMBERED.match(line) is not None


@pytest.mark.parametrize(
    "line",
    [
        "ValueError: x", "Error", "MyException", "_Exit(1)", "SomeWarnings", "ErrorX: y", "foo: bar",
        "Foo: bar", "foo1: x", "_: x", "__x__: y", "1.2: x", "x=1", "X.y=2", "12. item", "1234. no",
        "  indented", "\tx", "-flag", "[x]", "(x)", "|x", "`x`", "$ cmd", "# c", "> q", "* b",
        "INFO x", "WARNING x", "Traceback (most", 'File "a"', "plain words", "é: x", "a.b.c: d",
        "a.Error", "Error.a", "fooBar: x", "e", "0", "9. x",
    ],
)  # fmt: skip
def test_record_start_regex_matches_its_definition(line):
    assert (N._RECORD_START.match(line) is not None) is _record_start_reference(line)


def test_record_start_regex_on_random_lines():
    import random

    rng = random.Random(16)
    pieces = [
        "Error",
        "Exception",
        "Warning",
        "Exit",
        "foo",
        "Foo",
        "_",
        "a.b",
        "1",
        "12. ",
        ": ",
        "=",
        ":",
        " ",
    ]
    for _ in range(20000):
        line = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 5)))
        assert (N._RECORD_START.match(line) is not None) is _record_start_reference(line), line


def _cloudwatch_reference(text: str) -> str:
    """The CloudWatch pass as it was written before it skipped unstamped lines: the definition."""
    from itertools import pairwise

    from bot.unwrap import _CW_ANY, _CW_STAMP

    lines = text.split("\n")
    if _CW_ANY.search(text) is None or len(lines) < 2:
        return text
    kept, dropped = [lines[0]], 0
    for prev, line in pairwise(lines):
        stamp = _CW_STAMP.match(prev)
        if line and stamp is not None and prev[stamp.end() :].strip() == line.strip():
            dropped += 1
            continue
        kept.append(line)
    return "\n".join(kept) if dropped else text


def test_cloudwatch_pass_matches_its_definition_on_random_copies():
    import random

    from bot.unwrap import cloudwatch_duplicates

    rng = random.Random(16)
    stamps = ["2025-05-02T10:11:12.345Z    ", "2025-05-02T10:11:12+02:00 ", "1234 ", "2025-05-02 ", ""]
    messages = ["KV cache full", "  KV cache full  ", "", "12. item", "1234-", "INFO x"]
    for _ in range(3000):
        lines = [rng.choice(stamps) + rng.choice(messages) for _ in range(rng.randint(1, 8))]
        text = "\n".join(lines)
        assert cloudwatch_duplicates(text) == _cloudwatch_reference(text), text


def test_a_message_cut_at_a_blank_and_mid_word_reads_whole_in_one_view():
    # a terminal wraps at its width: here once after "GPU 6 " (the blank stays on the first line) and once
    # inside "by"; the view joined with nothing keeps the space where the cut kept one
    text = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 6 \n"
        "has a total capacity of 23.65 GiB of which 1.06 GiB is free. Of the allocated memory 20 GiB is allocated b\n"
        "y PyTorch"
    )
    views = [v.data for v in N.normalize(text).views]
    assert views[1] == (
        b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 6 has a total capacity of "
        b"23.65 GiB of which 1.06 GiB is free. Of the allocated memory 20 GiB is allocated by PyTorch"
    )
    assert views[2].endswith(b"allocated b y PyTorch")  # the view joined with a space, as before


def test_redaction_unwraps_a_long_log_and_its_cuts_give_the_views_of_the_raw_paste():
    # a long log whose lines carry docker compose prefixes, with a numbered list inside (the realistic
    # 10 MiB bench log holds dev paste sglang4330's "1. Run sglang ..." / "2. Run sglang ..."): redaction
    # returns it unwrapped (the markers gone) with each line's cut, and the views are a fresh reading's
    from bot.normalize import normalize
    from bot.redact import redact

    lines = [f"vllm-1  | INFO 07-02 07:41:58 [core.py:{i}] step {i} done" for i in range(6000)]
    lines[100:104] = [
        "",
        "1. Run sglang with --mem-fraction-static 0.84",
        "2. Run sglang with --mem-fraction-static 0.85",
        "",
    ]
    text = "\n".join(lines)
    red = redact(text)
    assert red.text.split("\n")[101:103] == [line[3:] for line in lines[101:103]]
    assert red.prefix_cuts is not None and list(red.prefix_cuts[99:105]) == [43, 0, 0, 0, 0, 44]
    fast, slow = normalize(red.text, red.prefix_cuts), normalize(text)
    assert [v.data for v in fast.views] == [v.data for v in slow.views]
