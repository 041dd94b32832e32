"""cast.messages gives its model classes consecutive CPython type version tags, so that
attribute reads on messages and parts never evict each other from the method cache
(see ``cast.messages._retagged``). Checked in a fresh interpreter that imports the
whole library and uses the models, as an application would."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Finds tp_version_tag as the 32-bit word of a fresh class that a look-up sets, one more
# on a class tagged next; then prints the model classes' tags after real use.
PROBE = """
import ctypes, json
def words(t):
    return [ctypes.c_uint32.from_address(id(t) + 4 * i).value for i in range(120)]
a, b = type("A", (), {}), type("B", (), {})
before = words(a)
getattr(a, "absent", None)
getattr(b, "absent", None)
after_a, after_b = words(a), words(b)
found = [i for i in range(120) if not before[i] and after_a[i] and after_b[i] == after_a[i] + 1]
import csum, csum.handlers, csum.serve
from cast import Message, ToolCall
from cast.messages import TextPart, ToolResult, Reasoning, ImagePart, BinaryPart, ProviderPart
from csum import Summarizer
call = ToolCall(id="c1", name="bash", arguments="{}")
chain = [Message.system("s"), Message.human("q"), Message.ai("a", call)]
chain.append(Message.tool("c1", "bash", "out"))
Message.model_validate(chain[2].model_dump(mode="json"))
async def handler(prompt):
    return "a summary"
Summarizer().summarize_chain_sync(handler, chain)
classes = (Message, TextPart, ToolCall, ToolResult, Reasoning, ImagePart, BinaryPart, ProviderPart)
tags = [ctypes.c_uint32.from_address(id(c) + 4 * found[0]).value for c in classes] if found else []
print(json.dumps(tags))
"""


@pytest.mark.skipif(
    platform.python_implementation() != "CPython", reason="CPython's type version tags"
)
def test_the_model_classes_have_consecutive_version_tags() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True
    )
    tags = json.loads(done.stdout.strip().splitlines()[-1])
    if not tags:
        pytest.skip("no tp_version_tag word found in this CPython's type objects")
    assert all(tags), tags  # every class tagged (its look-ups are cached)
    assert tags == list(range(tags[0], tags[0] + len(tags))), tags
