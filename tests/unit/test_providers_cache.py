"""The model-call cache: counted zero upstream calls on a rerun, attempts kept apart, modes, corruption, races."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from conftest import loopback_only
from pydantic import BaseModel

from pytest_skilleval.gateway.fake_upstream import Act, FakeUpstream
from pytest_skilleval.gateway.script import Script
from pytest_skilleval.providers.anthropic_chat import AnthropicChat
from pytest_skilleval.providers.base import ChatMessage, ChatProvider, ChatReply, ChatRequest, Embedder, ProviderError
from pytest_skilleval.providers.cache import CachedChat, CachedEmbedder, ProviderCache
from pytest_skilleval.providers.openai_chat import OpenAIChat
from pytest_skilleval.providers.openai_embeddings import OpenAIEmbedder
from pytest_skilleval.providers.retry import RetryPolicy

#: what the fake vendor answers when a test pushes no text of its own
REPLIES = Script.from_data({"steps": [{"text": "hello from upstream"}], "usage": {"input": 11, "output": 7}})

REPO = Path(__file__).resolve().parents[2]


class Verdict(BaseModel):
    label: str
    confidence: float


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    loopback_only(monkeypatch)


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream(REPLIES) as server:
        yield server


def fast() -> RetryPolicy:
    return RetryPolicy(retries=1, base_delay=0.0, max_delay=0.0, sleep=lambda s: None)


def openai_chat(upstream: FakeUpstream) -> OpenAIChat:
    return OpenAIChat("gpt-test", api_key="k", base_url=f"{upstream.url}/v1", retry=fast())


def ask(text: str, **kw: object) -> ChatRequest:
    return ChatRequest(messages=(ChatMessage(role="user", content=text),), **kw)  # type: ignore[arg-type]


def entries(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def test_a_rerun_makes_zero_upstream_calls(upstream: FakeUpstream, tmp_path: Path) -> None:
    """The issue's evidence: a first run calls upstream; the rerun, with new objects, calls it zero times."""
    requests = [ask(f"case {i}", attempt=a) for i in range(5) for a in range(2)]
    upstream.push(*[Act(text=f'{{"label": "L{i}", "confidence": 0.5}}') for i in range(len(requests))])

    first = CachedChat(openai_chat(upstream), ProviderCache(tmp_path, "readwrite"))
    replies = [first.structured(r, Verdict)[0] for r in requests]
    assert upstream.count() == 10 and first.cache.stats.writes == 10

    upstream.reset()
    upstream.script = Script.from_data({"steps": [{"text": "upstream was called: this must not be seen"}]})
    again = CachedChat(openai_chat(upstream), ProviderCache(tmp_path, "readwrite"))
    rerun = [again.structured(r, Verdict) for r in requests]
    assert upstream.count() == 0  # counted: not one request reached the server
    assert [v for v, _ in rerun] == replies and all(reply.cached for _, reply in rerun)
    assert again.cache.stats.hits == 10 and again.cache.stats.misses == 0


def test_anthropic_rerun_makes_zero_upstream_calls(upstream: FakeUpstream, tmp_path: Path) -> None:
    def chat() -> CachedChat:
        return CachedChat(AnthropicChat("claude-test", api_key="k", base_url=upstream.url, retry=fast()), ProviderCache(tmp_path))

    upstream.push(Act(text='{"label": "A", "confidence": 1}'))
    assert chat().structured(ask("x"), Verdict)[0].label == "A"
    upstream.reset()
    verdict, reply = chat().structured(ask("x"), Verdict)
    assert (verdict.label, reply.cached, upstream.count()) == ("A", True, 0)


def test_attempts_are_distinct_entries(upstream: FakeUpstream, tmp_path: Path) -> None:
    upstream.push(Act(text="first"), Act(text="second"))
    chat = CachedChat(openai_chat(upstream), ProviderCache(tmp_path))
    a0, a1 = chat.chat(ask("same", attempt=0)), chat.chat(ask("same", attempt=1))
    assert (a0.text, a1.text, upstream.count()) == ("first", "second", 2)
    assert len(entries(tmp_path)) == 2
    assert chat.chat(ask("same", attempt=1)).text == "second" and upstream.count() == 2


def test_key_covers_provider_model_base_url_and_schema() -> None:
    base = ProviderCache.chat_key("openai", "m", "http://a", ask("q"))
    assert base == ProviderCache.chat_key("openai", "m", "http://a", ask("q", model="m"))  # default model spelled out
    others = {ProviderCache.chat_key("anthropic", "m", "http://a", ask("q")), ProviderCache.chat_key("openai", "m2", "http://a", ask("q")),
              ProviderCache.chat_key("openai", "m", "http://b", ask("q")), ProviderCache.chat_key("openai", "m", "http://a", ask("q2")),
              ProviderCache.chat_key("openai", "m", "http://a", ask("q", json_schema={"type": "object"})),
              ProviderCache.chat_key("openai", "m", "http://a", ask("q", max_tokens=5))}
    assert base not in others and len(others) == 6


def test_read_mode_reads_but_never_writes(upstream: FakeUpstream, tmp_path: Path) -> None:
    CachedChat(openai_chat(upstream), ProviderCache(tmp_path)).chat(ask("known"))
    before = {p: p.read_bytes() for p in entries(tmp_path)}
    reader = CachedChat(openai_chat(upstream), ProviderCache(tmp_path, "read"))
    assert reader.chat(ask("known")).cached and upstream.count() == 1
    assert not reader.chat(ask("new")).cached and upstream.count() == 2
    assert {p: p.read_bytes() for p in entries(tmp_path)} == before and reader.cache.stats.writes == 0
    empty = tmp_path / "untouched"
    CachedChat(openai_chat(upstream), ProviderCache(empty, "read")).chat(ask("q"))
    assert not empty.exists()


def test_off_mode_neither_reads_nor_writes(upstream: FakeUpstream, tmp_path: Path) -> None:
    CachedChat(openai_chat(upstream), ProviderCache(tmp_path)).chat(ask("q"))
    off = CachedChat(openai_chat(upstream), ProviderCache(tmp_path / "off", "off"))
    assert not off.chat(ask("q")).cached and upstream.count() == 2 and not (tmp_path / "off").exists()
    assert ProviderCache(None, "readwrite").mode == "off"


def test_errors_are_not_cached(upstream: FakeUpstream, tmp_path: Path) -> None:
    upstream.push(Act("status", status=500), Act("status", status=500))
    chat = CachedChat(openai_chat(upstream), ProviderCache(tmp_path))
    with pytest.raises(ProviderError):
        chat.chat(ask("q"))
    assert entries(tmp_path) == [] and chat.chat(ask("q")).text == "hello from upstream"


@pytest.mark.parametrize("damage", [b"", b"{not json", b'{"format": 1, "key": "other", "reply": {}}', b'{"format": 1}', b"\xff\xfe"])
def test_corrupt_entries_are_ignored_and_replaced(upstream: FakeUpstream, tmp_path: Path, damage: bytes) -> None:
    chat = CachedChat(openai_chat(upstream), ProviderCache(tmp_path))
    chat.chat(ask("q"))
    (entry,) = entries(tmp_path)
    entry.write_bytes(damage)
    reply = chat.chat(ask("q"))
    assert not reply.cached and upstream.count() == 2 and chat.cache.stats.corrupt == 1
    assert json.loads(entry.read_text())["reply"]["text"] == "hello from upstream"


def test_a_symlinked_entry_is_not_followed(upstream: FakeUpstream, tmp_path: Path) -> None:
    chat = CachedChat(openai_chat(upstream), ProviderCache(tmp_path / "c"))
    chat.chat(ask("q"))
    (entry,) = entries(tmp_path / "c")
    elsewhere = tmp_path / "planted.json"
    elsewhere.write_bytes(entry.read_bytes())
    entry.unlink()
    entry.symlink_to(elsewhere)
    assert not chat.chat(ask("q")).cached and chat.cache.stats.write_errors == 1  # never written through the link either


class Counting(ChatProvider):
    """An in-memory provider (a user's own, say): the cache wraps anything implementing the interface."""

    name, model = "counting", "v1"

    def __init__(self) -> None:
        self.calls = 0
        self.lock = threading.Lock()

    def chat(self, request: ChatRequest) -> ChatReply:
        with self.lock:
            self.calls += 1
        return ChatReply(text=f"answer to {request.messages[-1].content} #{request.attempt}" + "x" * 5000, model="v1", provider="counting")


def test_concurrent_threads_leave_only_whole_entries(tmp_path: Path) -> None:
    inner = Counting()
    chat = CachedChat(inner, ProviderCache(tmp_path))
    requests = [ask(f"q{i % 10}", attempt=i % 3) for i in range(240)]
    threads = [threading.Thread(target=lambda chunk=requests[n::8]: [chat.chat(r) for r in chunk]) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    files = entries(tmp_path)
    assert len(files) == 30 and not [p for p in files if p.name.endswith(".tmp")]
    fresh = CachedChat(Counting(), ProviderCache(tmp_path))
    assert all(fresh.chat(r).cached for r in requests[:30]) and fresh.cache.stats.corrupt == 0


WRITER = """
import sys
from pytest_skilleval.providers.base import ChatMessage, ChatReply, ChatRequest
from pytest_skilleval.providers.cache import ProviderCache
cache = ProviderCache(sys.argv[1])
for round_ in range(12):
    for i in range(10):
        req = ChatRequest(messages=(ChatMessage(role="user", content=f"q{i}"),))
        key = cache.chat_key("p", "m", "", req)
        cache.put_reply(key, ChatReply(text=f"writer {sys.argv[2]} " + "y" * 20000, model="m", provider="p"))
        cache.get_reply(key)
print(cache.stats.corrupt)
"""


def test_concurrent_processes_leave_no_corrupt_entry(tmp_path: Path) -> None:
    """Like ``-n 8``: eight processes race to write and read the same ten keys."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), str(n)], stdout=subprocess.PIPE, env=env, text=True)
             for n in range(8)]
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0] * 8 and outs == ["0"] * 8  # no reader ever saw half an entry
    files = entries(tmp_path)
    assert len(files) == 10 and not [p for p in files if p.name.endswith(".tmp")]
    cache = ProviderCache(tmp_path, "read")
    for i in range(10):
        reply = cache.get_reply(cache.chat_key("p", "m", "", ChatRequest(messages=(ChatMessage(role="user", content=f"q{i}"),))))
        assert reply is not None and reply.text.startswith("writer ")
    assert cache.stats.corrupt == 0


# -- embeddings -------------------------------------------------------------------------------------


class CountingEmbedder(Embedder):
    model_id, dim = "count:v1", 0

    def __init__(self, size: int = 4) -> None:
        self.batches: list[list[str]] = []
        self.size = size

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append(list(texts))
        rows = np.array([[len(t) + 1.0, i + 1.0] + [1.0] * (self.size - 2) for i, t in enumerate(texts)], dtype=np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_embeddings_only_new_texts_are_embedded(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    emb = CachedEmbedder(inner, ProviderCache(tmp_path))
    first = emb.embed(["a", "bb", "a"])
    assert inner.batches == [["a", "bb"]] and first.shape == (3, 4) and np.array_equal(first[0], first[2])
    second = emb.embed(["bb", "ccc", "a", "dddd"])
    assert inner.batches[1] == ["ccc", "dddd"] and np.array_equal(second[0], first[1]) and np.array_equal(second[2], first[0])
    rerun = CachedEmbedder(CountingEmbedder(), ProviderCache(tmp_path))
    out = rerun.embed(["dddd", "a"])
    assert rerun.inner.batches == [] and out.dtype == np.float32 and rerun.dim == 4  # type: ignore[attr-defined]
    assert rerun.embed([]).shape == (0, 4)


def test_embeddings_of_another_size_are_not_trusted(tmp_path: Path) -> None:
    CachedEmbedder(CountingEmbedder(4), ProviderCache(tmp_path)).embed(["a"])
    changed = CountingEmbedder(6)
    out = CachedEmbedder(changed, ProviderCache(tmp_path)).embed(["a", "b"])
    assert out.shape == (2, 6) and changed.batches[-1] == ["a", "b"]


def test_corrupt_vectors_are_ignored(tmp_path: Path) -> None:
    CachedEmbedder(CountingEmbedder(), ProviderCache(tmp_path)).embed(["a"])
    (entry,) = entries(tmp_path)
    entry.write_bytes(b"\x93NUMPY garbage")
    inner = CountingEmbedder()
    emb = CachedEmbedder(inner, ProviderCache(tmp_path))
    assert emb.embed(["a"]).shape == (1, 4) and inner.batches == [["a"]] and emb.cache.stats.corrupt == 1


def test_remote_embeddings_rerun_makes_zero_upstream_calls(upstream: FakeUpstream, tmp_path: Path) -> None:
    def emb() -> CachedEmbedder:
        return CachedEmbedder(OpenAIEmbedder("e", api_key="k", base_url=f"{upstream.url}/v1", retry=fast()), ProviderCache(tmp_path))

    first = emb().embed(["one", "two", "three"])
    assert upstream.count() == 1
    upstream.reset()
    again = emb().embed(["three", "one"])
    assert upstream.count() == 0 and np.array_equal(again, first[[2, 0]])
    emb().embed(["one", "four"])
    assert upstream.count() == 1 and upstream.requests[0].body["input"] == ["four"]
