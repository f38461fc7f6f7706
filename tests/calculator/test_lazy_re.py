"""calculator.lazy_re: a pattern compiles on first use and then answers exactly as the compiled one."""

import re2

from calculator.lazy_re import LazyPattern

PATTERN = r"kv_size = (\d+), type_k = '(\w+)'"
LINE = "llama_kv_cache_init: kv_size = 4096, type_k = 'q8_0', n_layer = 32"


def test_nothing_is_compiled_until_a_method_is_asked_for():
    lazy = LazyPattern(PATTERN)
    assert lazy.pattern == PATTERN
    assert "search" not in vars(lazy)
    assert lazy.search(LINE).groups() == ("4096", "q8_0")
    assert "search" in vars(lazy)  # later calls go straight to the compiled pattern's method
    assert lazy.groupindex == {} and vars(lazy)["_compiled"] is not None  # compiled once


def test_every_method_answers_as_the_compiled_pattern():
    lazy, compiled = LazyPattern(PATTERN), re2.compile(PATTERN)
    assert lazy.match(LINE) is None and compiled.match(LINE) is None
    assert lazy.findall(LINE) == compiled.findall(LINE) == [("4096", "q8_0")]
    assert [m.span() for m in lazy.finditer(LINE * 2)] == [m.span() for m in compiled.finditer(LINE * 2)]
    assert lazy.sub("X", LINE) == compiled.sub("X", LINE) == "llama_kv_cache_init: X, n_layer = 32"
    assert lazy.groupindex == compiled.groupindex and lazy.groups == compiled.groups == 2
    assert lazy.fullmatch(LINE) is None and LazyPattern(r"\w+").fullmatch("abc").group() == "abc"
