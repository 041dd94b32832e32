"""Atomic writes, bounded reads, lone surrogates and Ctrl-C in the command lines.

Fault injection: a write that fails anywhere (the write itself, fsync, the rename, an
unencodable character, Ctrl-C between two chunks) must leave the target byte-identical
and no temporary file behind.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

import pytest

import cast.chainio
import cast.cli
import csum.cli
from cast.chainio import (
    InputTooLargeError,
    read_bytes,
    read_json,
    run_command,
    run_console,
    write_atomic,
    write_json,
)

ROOT = Path(__file__).resolve().parents[2]

CHAIN = [
    {"role": "system", "content": "You are a shell agent."},
    {"role": "user", "content": "list files"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "a.txt\nb.txt\n" * 400},
    {"role": "assistant", "content": "There are two files."},
]
OLD = b'{"old": "content that must survive"}\n'


def _run(main: Callable[..., int], *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@pytest.fixture
def target(tmp_path: Path) -> Path:
    path = tmp_path / "out.json"
    path.write_bytes(OLD)
    path.chmod(0o640)
    return path


def _chunks(*texts: str, fail: BaseException | None = None) -> Iterator[str]:
    yield from texts
    if fail is not None:
        raise fail


# -- write_atomic ------------------------------------------------------------------------


def test_write_atomic_replaces_and_keeps_the_mode(target: Path) -> None:
    write_atomic(target, _chunks("new ", "text ü\n"))
    assert target.read_bytes() == "new text ü\n".encode()
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert _leftovers(target.parent) == []


def test_write_atomic_new_file_gets_the_umask_default(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "new.json", ["x"])
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o640


def test_write_atomic_follows_a_symlink(tmp_path: Path, target: Path) -> None:
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_atomic(link, ["via link"])
    assert link.is_symlink()
    assert target.read_text() == "via link"


class _FailingFile(io.StringIO):
    """A text file whose second write fails (a disk filling up half-way)."""

    def __init__(self, real: Any) -> None:
        super().__init__()
        self.real = real
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        if self.writes == 2:
            raise OSError(28, "No space left on device")
        return int(self.real.write(text))

    def flush(self) -> None:
        self.real.flush()

    def fileno(self) -> int:
        return int(self.real.fileno())

    def close(self) -> None:
        self.real.close()


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        pytest.param("write", OSError, id="write-fails-mid-way"),
        pytest.param("fsync", OSError, id="fsync-fails"),
        pytest.param("replace", OSError, id="rename-fails"),
        pytest.param("interrupt", KeyboardInterrupt, id="ctrl-c-between-chunks"),
        pytest.param("surrogate", UnicodeEncodeError, id="unencodable-character"),
    ],
)
def test_a_failed_write_leaves_the_target_byte_identical(
    target: Path, monkeypatch: pytest.MonkeyPatch, fault: str, error: type[BaseException]
) -> None:
    monkeypatch.setattr(cast.chainio, "_WRITE_BATCH", 4)  # one write per chunk
    chunks = _chunks("[\n", '  "first chunk",\n', '  "second chunk"\n', "]\n")
    if fault == "write":
        real_open = open

        def failing_open(*args: Any, **kwargs: Any) -> Any:
            return _FailingFile(real_open(*args, **kwargs))

        monkeypatch.setattr(cast.chainio, "open", failing_open, raising=False)
    elif fault == "fsync":

        def no_fsync(fd: int) -> None:
            raise OSError(5, "Input/output error")

        monkeypatch.setattr(os, "fsync", no_fsync)
    elif fault == "replace":

        def no_replace(*args: Any) -> None:
            raise OSError(18, "Invalid cross-device link")

        monkeypatch.setattr(os, "replace", no_replace)
    elif fault == "interrupt":
        chunks = _chunks("[\n", '  "first",\n', fail=KeyboardInterrupt())
    else:
        chunks = _chunks("[\n", '  "\ud800"\n', "]\n")
    with pytest.raises(error):
        write_atomic(target, chunks)
    assert target.read_bytes() == OLD
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert _leftovers(target.parent) == []


def test_write_json_reports_an_unencodable_character_and_writes_nothing(target: Path) -> None:
    with pytest.raises(ValueError, match=r"cannot write .*UTF-8 cannot encode"):
        write_json({"text": "\udc80"}, str(target))
    assert target.read_bytes() == OLD
    out = io.StringIO()
    with pytest.raises(ValueError, match="standard output"):
        write_json({"text": "\udc80"}, None, out)
    assert out.getvalue() == ""


@pytest.mark.parametrize(
    ("program", "fmt"),
    [
        *(("cast", fmt) for fmt in ("openai", "anthropic", "openai_responses", "gemini")),
        ("csum", "openai"),  # csum writes the format it read
    ],
)
def test_an_object_payload_is_refused_for_a_json_lines_file(
    tmp_path: Path, program: str, fmt: str
) -> None:
    # A request body is one JSON object: written indented into a .jsonl file it was a
    # file no JSON lines reader, ours included, could read back.
    chain = tmp_path / "chain.json"
    chain.write_text(json.dumps(CHAIN), encoding="utf-8")
    output = tmp_path / "out.jsonl"
    output.write_bytes(OLD)
    if program == "cast":
        code, _, err = _run(cast.cli.main, "convert", str(chain), "--to", fmt, "-o", str(output))
    else:
        argv = ["summarize", str(chain), "--format", fmt, "-o", str(output), "--budget", "100KiB"]
        code, _, err = _run(csum.cli.main, *argv)
    assert code == 2
    assert "a JSON lines file holds a list" in err
    assert str(output) in err
    assert output.read_bytes() == OLD
    assert _leftovers(tmp_path) == []


def test_a_list_payload_round_trips_through_a_json_lines_file(tmp_path: Path) -> None:
    chain = tmp_path / "chain.json"
    chain.write_text(json.dumps(CHAIN), encoding="utf-8")
    lines = tmp_path / "out.jsonl"
    code, _, err = _run(cast.cli.main, "convert", str(chain), "--to", "chaincast", "-o", str(lines))
    assert code == 0, err
    assert len(lines.read_text(encoding="utf-8").splitlines()) == len(CHAIN)
    code, out, err = _run(cast.cli.main, "convert", str(lines), "--to", "openai")
    assert code == 0, err
    assert json.loads(out)["messages"][-1]["content"] == "There are two files."


# -- the command lines -------------------------------------------------------------------


def test_convert_onto_its_own_input(tmp_path: Path) -> None:
    chain = tmp_path / "chain.json"
    chain.write_text(json.dumps(CHAIN), encoding="utf-8")
    code, _, err = _run(cast.cli.main, "convert", str(chain), "--to", "anthropic", "-o", str(chain))
    assert code == 0, err
    assert "messages" in json.loads(chain.read_text(encoding="utf-8"))
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("program", ["cast", "csum"])
def test_a_failed_write_onto_the_input_leaves_it_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, program: str
) -> None:
    chain = tmp_path / "chain.json"
    chain.write_text(json.dumps(CHAIN, indent=1), encoding="utf-8")
    before = chain.read_bytes()

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    if program == "cast":
        code, _, err = _run(
            cast.cli.main, "convert", str(chain), "--to", "gemini", "-o", str(chain)
        )
    else:
        code, _, err = _run(
            csum.cli.main, "summarize", str(chain), "--budget", "1KiB", "-q", "-o", str(chain)
        )
    assert code == 2
    assert "No space left on device" in err
    assert "left as it was" in err
    assert len(err.splitlines()) == 1
    assert chain.read_bytes() == before
    assert _leftovers(tmp_path) == []


SURROGATE_CHAIN = (
    '[{"role": "user", "content": "emoji cut in half: \\ud83d"},'
    ' {"role": "assistant", "content": "ok \\udc00 and a pair \\ud83d\\ude00"}]'
)


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(("cast", "inspect"), id="inspect"),
        pytest.param(("cast", "lint", "--target", "anthropic"), id="lint"),
        pytest.param(("cast", "convert", "--to", "anthropic", "-o", "OUT"), id="convert"),
        pytest.param(("csum", "summarize", "-q", "-o", "OUT"), id="summarize"),
    ],
)
def test_lone_surrogates_are_replaced_the_same_way_by_every_command(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    chain = tmp_path / "chain.json"
    chain.write_text(SURROGATE_CHAIN, encoding="ascii")
    out = tmp_path / "out.json"
    program, name, *rest = command
    argv = [name, str(chain), *(str(out) if a == "OUT" else a for a in rest)]
    code, _, err = _run(cast.cli.main if program == "cast" else csum.cli.main, *argv)
    assert code == 0, err
    assert "2 strings hold lone surrogates (first at [0].content)" in err
    assert "replaced by U+FFFD" in err
    if "OUT" in rest:
        text = out.read_text(encoding="utf-8")
        assert "emoji cut in half: \ufffd" in text
        assert "ok \ufffd and a pair \U0001f600" in text


def test_read_json_keeps_valid_pairs_and_warns_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chain = tmp_path / "chain.json"
    chain.write_text('["\\ud83d\\ude00", {"k\\u00e9y": "\\u00e9"}]', encoding="ascii")
    assert read_json(str(chain)) == ["\U0001f600", {"kéy": "é"}]
    assert capsys.readouterr().err == ""


def test_surrogate_in_a_key_is_replaced_with_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chain = tmp_path / "chain.json"
    chain.write_text('{"messages": [{"\\udfff": 1}]}', encoding="ascii")
    assert read_json(str(chain)) == {"messages": [{"\ufffd": 1}]}
    assert "1 string holds lone surrogates (first at messages[0].{key})" in capsys.readouterr().err


def test_invalid_json_still_names_line_and_column(tmp_path: Path) -> None:
    chain = tmp_path / "chain.json"
    chain.write_text('[{"role": "user",\n "content": }]', encoding="utf-8")
    with pytest.raises(ValueError, match="not valid JSON: Expecting value at line 2 column 13"):
        read_json(str(chain))


# -- input limits ------------------------------------------------------------------------


def test_a_regular_file_over_the_limit_is_refused_before_reading(tmp_path: Path) -> None:
    chain = tmp_path / "chain.json"
    chain.write_text(json.dumps(CHAIN), encoding="utf-8")
    code, out, err = _run(cast.cli.main, "inspect", str(chain), "--max-input-bytes", "1KiB")
    assert code == 2
    assert out == ""
    assert "larger than the input limit of 1024 bytes" in err
    assert "--max-input-bytes" in err
    assert _run(cast.cli.main, "inspect", str(chain), "--max-input-bytes", "1MiB")[0] == 0


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
@pytest.mark.parametrize("program", ["cast", "csum"])
def test_dev_zero_is_refused_at_the_limit(program: str) -> None:
    if program == "cast":
        code, _, err = _run(cast.cli.main, "inspect", "/dev/zero", "--max-input-bytes", "4MiB")
    else:
        code, _, err = _run(csum.cli.main, "summarize", "/dev/zero", "--max-input-bytes", "4MiB")
    assert code == 2
    assert "/dev/zero is larger than the input limit of 4194304 bytes" in err


def test_read_bytes_bounds_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"x" * 100)))
    with pytest.raises(InputTooLargeError, match="standard input is larger than"):
        read_bytes("-", 99)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"x" * 100)))
    assert read_bytes("-", 100) == b"x" * 100


def test_the_default_limit_is_one_gibibyte() -> None:
    parser = cast.cli.main_parser()
    assert parser.parse_args(["inspect", "x"]).max_input_bytes == 1 << 30
    assert csum.cli.main_parser().parse_args(["summarize", "x"]).max_input_bytes == 1 << 30


# -- one command line -------------------------------------------------------------------


def _demo_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    print("warning: to stderr", file=sys.stderr)  # redirected to the command's stderr
    if args.fail == "usage":
        raise ValueError("bad\ninput")
    if args.fail == "failed":
        raise RuntimeError("handler down")
    if args.fail == "bug":
        raise KeyError("unmapped")
    print("done", file=out)
    return 0


def _demo_run(argv: list[str]) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="demo")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("go").add_argument("--fail")
    out, err = io.StringIO(), io.StringIO()
    failures = [((RuntimeError,), 1, "failed"), ((ValueError,), 2, "error")]
    code = run_command(parser, {"go": _demo_command}, argv, (out, err), failures)
    return code, out.getvalue(), err.getvalue()


def test_run_command_maps_each_failure_to_one_line_and_its_code() -> None:
    assert _demo_run(["go"]) == (0, "done\n", "warning: to stderr\n")
    assert _demo_run(["go", "--fail", "usage"]) == (
        2,
        "",
        "warning: to stderr\ndemo go: error: bad input\n",
    )
    assert _demo_run(["go", "--fail", "failed"])[::2] == (
        1,
        "warning: to stderr\ndemo go: failed: handler down\n",
    )


def test_run_command_lets_an_unmapped_error_through_and_says_usage_errors() -> None:
    with pytest.raises(KeyError, match="unmapped"):
        _demo_run(["go", "--fail", "bug"])
    code, out, err = _demo_run(["stop"])
    assert (code, out) == (2, "")
    assert err.startswith("usage: demo")
    assert "invalid choice: 'stop'" in err
    code, out, err = _demo_run(["--help"])
    assert (code, err) == (0, "")
    assert out.startswith("usage: demo")


# -- Ctrl-C ------------------------------------------------------------------------------


def test_run_console_turns_ctrl_c_into_one_line_and_130(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def main() -> int:
        raise KeyboardInterrupt

    main.__module__ = "csum.cli"
    with pytest.raises(SystemExit) as exit_info:
        run_console(main)
    assert exit_info.value.code == 130
    assert capsys.readouterr().err == "csum: interrupted; no file was changed\n"


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _waiting_for_input(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/syscall").read_text().split()
    except OSError:
        return False
    return fields[:2] == ["0", "0x0"]  # read(2) on file descriptor 0


@pytest.mark.skipif(not Path("/proc/self/syscall").exists(), reason="needs Linux /proc")
def test_sigint_while_reading_exits_130_with_one_line(tmp_path: Path) -> None:
    chain = tmp_path / "chain.json"
    chain.write_bytes(OLD)
    process = subprocess.Popen(
        [sys.executable, "-m", "cast", "convert", "-", "--to", "openai", "-o", str(chain)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        # A shell's background job ignores SIGINT, and so would the child (Python then
        # installs no handler): give it the default disposition, as a terminal would.
        preexec_fn=_default_sigint,  # noqa: PLW1509 - set before exec; the test starts no threads
    )
    try:
        for _ in range(600):  # until it blocks reading standard input
            if _waiting_for_input(process.pid):
                break
            time.sleep(0.05)
        else:
            pytest.skip("the process never blocked on standard input")
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130
    assert err.decode() == "cast: interrupted; no file was changed\n"
    assert chain.read_bytes() == OLD
