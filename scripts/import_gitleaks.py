"""Import gitleaks' secret rules (and each rule's own positive examples) as data.

    python scripts/import_gitleaks.py /path/to/gitleaks-checkout COMMIT

reads ``config/gitleaks.toml`` (the rules) and ``cmd/generate/config/rules/*.go`` (the true positives
each rule is validated against there), and writes

- ``bot/data/secret_rules_gitleaks.yaml``: every rule that compiles under RE2 (id, kind, regex,
  keywords, entropy, secret group), with the attribution and MIT licence note;
- ``tests/data/secrets/gitleaks_examples.jsonl``: the examples, one ``{"rule", "text"}`` per line.

gitleaks builds most examples by filling a placeholder with a random string drawn from a regex
(``secrets.NewSecret``); this script evaluates those Go expressions (string literals, ``+``,
``fmt.Sprintf``, the ``utils`` pattern helpers, ``GenerateSampleSecret(s)``) with a seeded generator,
and keeps an example only when the rule, as gitleaks applies it (regex, secret group, entropy), finds
it.  Examples it cannot evaluate (local variables, base64 helpers) are left out and counted.
"""

from __future__ import annotations

import json
import math
import random
import re
import sys
import tomllib
import zlib
from collections import Counter
from pathlib import Path

import re2
import yaml

ROOT = Path(__file__).resolve().parent.parent
RULES_OUT = ROOT / "bot" / "data" / "secret_rules_gitleaks.yaml"
EXAMPLES_OUT = ROOT / "tests" / "data" / "secrets" / "gitleaks_examples.jsonl"

# gitleaks' catch-all `key = value` rule flags model names and paths in engine logs
# ("tokenizer": "Qwen2.5-7B-Instruct" has its entropy); the generic assignment, flag, header and
# JSON-field rules in bot/data/secret_rules.yaml cover that ground by the variable's name instead.
EXCLUDED = {"generic-api-key": "matches ordinary engine-log fields; replaced by the named generic rules"}

WORDS = {
    "api": "API",
    "aws": "AWS",
    "gcp": "GCP",
    "jwt": "JWT",
    "id": "ID",
    "pat": "PAT",
    "ssh": "SSH",
    "url": "URL",
    "sas": "SAS",
    "cli": "CLI",
    "ci": "CI",
    "cicd": "CI/CD",
    "oauth": "OAuth",
    "pypi": "PyPI",
    "npm": "npm",
    "github": "GitHub",
    "gitlab": "GitLab",
    "openai": "OpenAI",
    "huggingface": "Hugging Face",
    "digitalocean": "DigitalOcean",
    "sendgrid": "SendGrid",
    "hashicorp": "HashiCorp",
    "mailchimp": "Mailchimp",
    "rubygems": "RubyGems",
    "pulumi": "Pulumi",
    "dockerhub": "Docker Hub",
    "linkedin": "LinkedIn",
    "sumologic": "Sumo Logic",
    "newrelic": "New Relic",
    "planetscale": "PlanetScale",
    "mapbox": "Mapbox",
    "jfrog": "JFrog",
    "1password": "1Password",
    "ad": "AD",
    "b64": "base64",
    "base64": "base64",
    "hmac": "HMAC",
    "kubernetes": "Kubernetes",
    "pem": "PEM",
    "sso": "SSO",
    "scm": "SCM",
    "ado": "ADO",
    "sk": "SK",
    "rsa": "RSA",
    "pkcs12": "PKCS#12",
    "iam": "IAM",
    "akid": "AKID",
}


def kind_of(rule_id: str) -> str:
    words = [WORDS.get(w, w) for w in rule_id.split("-")]
    if words and words[0] == rule_id.split("-")[0]:
        words[0] = words[0].capitalize()
    return " ".join(words)


# --- a small evaluator for the Go expressions that build gitleaks' true positives ---

TOKEN = re.compile(
    r"\s+|//[^\n]*|(?P<raw>`[^`]*`)|(?P<str>\"(?:\\.|[^\"\\\n])*\")|(?P<num>\d+)"
    r"|(?P<name>[A-Za-z_][\w.]*)|(?P<ell>\.\.\.)|(?P<op>:=|[-+(){}\[\],=:])"
)


class Unsupported(Exception):
    pass


def tokens(src: str, at: int):
    pos = at
    while pos < len(src):
        m = TOKEN.match(src, pos)
        if m is None:
            raise Unsupported(src[pos : pos + 20])
        pos = m.end()
        kind = m.lastgroup
        if kind is not None:
            yield kind, m.group(kind), pos


def go_string(tok: str) -> str:
    if tok.startswith("`"):
        return tok[1:-1]
    return tok[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")


class Parser:
    def __init__(self, src: str, at: int, rng: random.Random):
        self.toks = list(_until_statement_end(src, at))
        self.i = 0
        self.rng = rng

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else ("eof", "", 0)

    def take(self, value: str | None = None):
        tok = self.peek()
        if value is not None and tok[1] != value:
            raise Unsupported(f"expected {value}, got {tok[1]}")
        self.i += 1
        return tok

    def expr(self):
        value = self.term()
        while self.peek()[1] == "+":
            self.take()
            right = self.term()
            if not isinstance(value, str) or not isinstance(right, str):
                raise Unsupported("+ on lists")
            value += right
        return value

    def term(self):
        kind, text, _ = self.take()
        if kind in ("raw", "str"):
            return go_string(text)
        if kind == "num":
            return text
        if text == "[":
            self.take("]")
            self.take("string")
            return self.items("{", "}")
        if kind == "name" and self.peek()[1] == "(":
            return self.call(text)
        raise Unsupported(text)

    def items(self, open_: str, close: str) -> list:
        """Comma-separated elements; one that cannot be evaluated is skipped, not fatal."""
        self.take(open_)
        out: list = []
        while self.peek()[1] != close:
            start = self.i
            try:
                value = self.expr()
                if self.peek()[1] == "...":
                    self.take()
                out.extend(value if isinstance(value, list) else [value])
            except Unsupported:
                self.i = start
                self.skip_element(close)
            if self.peek()[1] == ",":
                self.take()
        self.take(close)
        return out

    def skip_element(self, close: str) -> None:
        depth = 0
        while True:
            _kind, text, _ = self.peek()
            if text in "([{" and text:
                depth += 1
            elif text in ")]}" and text:
                if depth == 0:
                    return
                depth -= 1
            elif text == "," and depth == 0:
                return
            elif text == "":
                raise Unsupported("eof")
            self.take()

    def call(self, name: str):
        args = self.items("(", ")")
        helpers = {
            "utils.Numeric": "[0-9]{%s}",
            "utils.Hex": "[a-f0-9]{%s}",
            "utils.AlphaNumeric": "[a-z0-9]{%s}",
            "utils.AlphaNumericExtendedShort": "[a-z0-9_-]{%s}",
            "utils.AlphaNumericExtended": "[a-z0-9=_\\-]{%s}",
            "utils.AlphaNumericExtendedLong": "[a-z0-9\\/=_\\+\\-]{%s}",
        }
        if name in helpers and len(args) == 1:
            return helpers[name] % args[0]
        if name == "utils.Hex8_4_4_4_12":
            return "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
        if name == "secrets.NewSecret" and len(args) == 1:
            return sample(args[0], self.rng)
        if name == "fmt.Sprintf" and args:
            return go_sprintf(args[0], args[1:])
        if name == "utils.GenerateSampleSecret" and len(args) == 2:
            return f'{args[0]}_api_token = "{args[1]}"'
        if name == "utils.GenerateSampleSecrets" and len(args) == 2:
            return [
                t.replace("{i}", args[0]).replace("{I}", args[0].upper()).replace("{s}", args[1])
                for t in SAMPLE_TEMPLATES
            ]
        if name == "append" and args:
            return args  # append(tps, ...): the first element is the list so far, evaluated as absent
        raise Unsupported(name)


# cmd/generate/config/utils/generate.go, GenerateSampleSecrets (the cases gitleaks enables)
SAMPLE_TEMPLATES = [
    '{i}Token="{s}"',
    '{i}Token = "{s}"',
    "{i}Token={s}",
    "{i}Token = {s}",
    '{\n    "{i}_token": "{s}"\n}',
    '{"config.ini": "{I}_TOKEN={s}\\nBACKUP_ENABLED=true"}',
    "<{i}Token>\n    {s}\n</{i}Token>",
    "{i}_token: {s}",
    "{i}_token: '{s}'",
    '{i}_token: "{s}"',
    'string {i}Token = "{s}";',
    'var {i}Token string = "{s}"',
    '{i}Token := "{s}"',
    "{i}Token := `{s}`",
    'String {i}Token = "{s}";',
    'var {i}Token = "{s}"',
    '${i}Token .= "{s}"',
    "{i}Token = '{s}'",
    '{i}Token = "{s}"',
    'System.setProperty("{I}_TOKEN", "{s}")',
    '  "{i}Token" => "{s}"',
    '{i}_TOKEN = "{s}"',
    '{i}_TOKEN := "{s}"',
    '{i}_TOKEN ::= "{s}"',
    '{i}_TOKEN :::= "{s}"',
    '{i}_TOKEN ?= "{s}"',
]


def go_sprintf(fmt: str, args: list) -> str:
    values = iter(args)
    try:
        return re.sub(r"%%|%[sqvd]", lambda m: "%" if m.group() == "%%" else str(next(values)), fmt)
    except StopIteration as exc:
        raise Unsupported("Sprintf arity") from exc


def _until_statement_end(src: str, at: int):
    """Tokens of one statement: up to the newline where every bracket is closed."""
    depth = 0
    for kind, text, end in tokens(src, at):
        if text in ("(", "[", "{"):
            depth += 1
        elif text in (")", "]", "}"):
            depth -= 1
            if depth < 0:
                return
        yield kind, text, end
        if depth == 0 and "\n" in src[end : end + 1] and text not in ("+", ",", ":=", "="):
            return


# --- a generator of strings matching a (simple) regex, as gitleaks' reggen does ---

POSIX = {
    "[:alnum:]": "a-zA-Z0-9",
    "[:alpha:]": "a-zA-Z",
    "[:digit:]": "0-9",
    "[:upper:]": "A-Z",
    "[:lower:]": "a-z",
    "[:xdigit:]": "0-9a-fA-F",
}
ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def sample(pattern: str, rng: random.Random) -> str:
    from re import _constants as c
    from re import _parser

    for name, chars in POSIX.items():
        pattern = pattern.replace(name, chars)
    pattern = pattern.replace("(?i)", "").replace("(?-i:", "(?:")
    try:
        tree = _parser.parse(pattern)
    except re.error as exc:
        raise Unsupported(pattern) from exc

    def pick_in(items) -> str:
        pool: list[str] = []
        negate = False
        for op, av in items:
            if op is c.NEGATE:
                negate = True
            elif op is c.LITERAL:
                pool.append(chr(av))
            elif op is c.RANGE:
                pool.extend(chr(x) for x in range(av[0], av[1] + 1))
            elif op is c.CATEGORY:
                pool.extend(
                    {c.CATEGORY_DIGIT: "0123456789", c.CATEGORY_WORD: ALNUM + "_", c.CATEGORY_SPACE: " "}.get(
                        av, ""
                    )
                )
        if negate:
            pool = [ch for ch in ALNUM if ch not in pool]
        if not pool:
            raise Unsupported("empty class")
        return rng.choice(sorted(set(pool)))

    def gen(nodes) -> str:
        out = []
        for op, av in nodes:
            if op is c.LITERAL:
                out.append(chr(av))
            elif op is c.IN:
                out.append(pick_in(av))
            elif op is c.ANY:
                out.append(rng.choice(ALNUM))
            elif op is c.CATEGORY:
                out.append(pick_in([(op, av)]))
            elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
                lo, hi, sub = av
                hi = lo + 5 if hi is c.MAXREPEAT else hi
                out.extend(gen(sub) for _ in range(rng.randint(lo, hi)))
            elif op is c.SUBPATTERN:
                out.append(gen(av[-1]))
            elif op is c.BRANCH:
                out.append(gen(rng.choice(av[1])))
            elif op is c.AT:
                continue
            else:
                raise Unsupported(str(op))
        return "".join(out)

    return gen(tree)


# --- applying a rule as gitleaks does ---


def entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values()) if text else 0.0


def finds(rule: dict, compiled, text: str) -> bool:
    for m in compiled.finditer(text):
        group = rule.get("secretGroup", 1 if compiled.groups else 0)
        secret = m.group(group) if group <= compiled.groups else m.group(0)
        secret = secret if secret is not None else m.group(0)
        if entropy(secret) >= rule.get("entropy", 0):
            return True
    return False


def rule_sources(rules_dir: Path) -> dict[str, str]:
    """Rule id -> the Go function body that defines and validates it."""
    bodies: dict[str, str] = {}
    for path in sorted(rules_dir.glob("*.go")):
        src = path.read_text()
        for chunk in re.split(r"\nfunc ", src)[1:]:
            m = re.search(r'RuleID:\s*"([^"]+)"', chunk)
            if m:
                bodies[m.group(1)] = chunk
    return bodies


def examples_for(rule_id: str, body: str) -> list[str]:
    rng = random.Random(zlib.crc32(rule_id.encode()))
    out: list[str] = []
    for m in re.finditer(r"\btps\s*(?::=|=)\s*", body):
        if body[m.end() : m.end() + 3] == "map":
            continue  # path-based rules (ValidateWithPaths)
        try:
            value = Parser(body, m.end(), rng).expr()
        except (Unsupported, IndexError):
            continue
        out.extend(value if isinstance(value, list) else [value])
    return [x for x in out if isinstance(x, str) and x.strip()]


def main(checkout: Path, commit: str) -> int:
    config = tomllib.loads((checkout / "config" / "gitleaks.toml").read_text())
    bodies = rule_sources(checkout / "cmd" / "generate" / "config" / "rules")
    kept, skipped, examples, no_examples = [], [], [], []
    for rule in config["rules"]:
        rid = rule["id"]
        if "regex" not in rule or rid in EXCLUDED:
            skipped.append(f"{rid}: {EXCLUDED.get(rid, 'matches file paths, not text')}")
            continue
        try:
            compiled = re2.compile(rule["regex"])
        except re2.error as exc:
            skipped.append(f"{rid}: does not compile under RE2 ({exc})")
            continue
        entry = {
            "id": rid,
            "kind": kind_of(rid),
            "regex": rule["regex"],
            "keywords": rule.get("keywords", []),
        }
        if "entropy" in rule:
            entry["entropy"] = rule["entropy"]
        if "secretGroup" in rule:
            entry["group"] = rule["secretGroup"]
        kept.append(entry)
        found = [t for t in examples_for(rid, bodies.get(rid, "")) if finds(rule, compiled, t)]
        if not found:
            no_examples.append(rid)
        examples += [{"rule": rid, "text": t} for t in dict.fromkeys(found)]
    header = (
        f"# Secret rules from gitleaks (https://github.com/gitleaks/gitleaks), config/gitleaks.toml at\n"
        f"# commit {commit}, imported by scripts/import_gitleaks.py; do not edit by hand.\n"
        "# gitleaks is MIT licensed: Copyright (c) 2019 Zachary Rice. Permission is hereby granted, free of\n"
        "# charge, to any person obtaining a copy of this software and associated documentation files (the\n"
        '# "Software"), to deal in the Software without restriction, including without limitation the rights\n'
        "# to use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of the Software, and\n"
        "# to permit persons to whom the Software is furnished to do so, subject to the following conditions:\n"
        "# The above copyright notice and this permission notice shall be included in all copies or\n"
        '# substantial portions of the Software. THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND.\n'
        "# Left out:\n" + "".join(f"#   {s}\n" for s in skipped)
    )
    RULES_OUT.parent.mkdir(parents=True, exist_ok=True)
    body = yaml.safe_dump({"source": f"gitleaks@{commit}", "rules": kept}, sort_keys=False, width=1000)
    RULES_OUT.write_text(header + body)
    EXAMPLES_OUT.parent.mkdir(parents=True, exist_ok=True)
    EXAMPLES_OUT.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in examples))
    print(
        f"{len(kept)} rules kept, {len(skipped)} left out, {len(examples)} examples; "
        f"{len(no_examples)} rules without a reproducible example: {', '.join(no_examples)}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1]), sys.argv[2]))
