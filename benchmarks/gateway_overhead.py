"""Per-request overhead of the model gateway, measured side by side on loopback.

Three paths, same client (httpx, keep-alive), same request, interleaved round by round so that
machine noise hits all of them alike:

- direct:   client → trivial local upstream (the fake vendor server)
- proxy:    client → gateway (proxy mode: token check, forward with the real key, usage read,
            JSONL log with the body, scrubbing) → the same upstream
- scripted: client → gateway (scripted mode: answers itself; what CI runs the CLIs on)

As in real use, the client (the agent) and the upstream (the vendor) are separate processes;
only the gateway runs in this one, so no GIL is shared between them. Two request sizes: a small
chat call, and an agent-sized one (~100 KB of prompt, what Claude Code sends every turn), each as
plain JSON and as SSE. Prints median and p95 per path, the overhead (proxy − direct), and ratios.

    .venv/bin/python benchmarks/gateway_overhead.py [--requests 400]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_skilleval.gateway import Gateway, GatewayConfig, Script, Upstream
from pytest_skilleval.gateway.fake_upstream import FakeUpstream

SCRIPT = Script.from_data({"steps": [{"text": "FINAL: a short answer from the model"}]})
REAL_KEY = "sk-bench-real-key-0123456789"
CASES = [(size, stream) for size in ("small", "agent-100KB") for stream in (False, True)]


def body(size: str, stream: bool) -> dict[str, object]:
    system = "" if size == "small" else "You are a coding agent. " * 4000  # ~100 KB, like an agent CLI's prompt
    messages = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": "Summarise the file in one line."})
    return {"model": "gpt-4o-mini", "messages": messages, "stream": stream}


def client_main(spec: str) -> None:
    """Child process: the agent. Runs every case against every target; prints samples as JSON."""
    import httpx

    plan = json.loads(spec)
    clients = {name: httpx.Client(base_url=url, headers={"authorization": f"Bearer {key}"}, timeout=30)
               for name, (url, key) in plan["targets"].items()}
    results: dict[str, dict[str, list[float]]] = {}
    for size, stream in CASES:
        payload = body(size, stream)
        samples: dict[str, list[float]] = {name: [] for name in clients}
        for n in range(plan["warmup"] + plan["requests"]):
            for name, client in clients.items():  # interleaved: noise hits every path alike
                started = time.perf_counter()
                response = client.post("/chat/completions", json=payload)
                response.read()
                elapsed = (time.perf_counter() - started) * 1000
                assert response.status_code == 200, response.text
                if n >= plan["warmup"]:
                    samples[name].append(elapsed)
        results[f"{size} {'sse' if stream else 'json'}"] = samples
    json.dump(results, sys.stdout)


def upstream_main() -> None:
    """Child process: the vendor. Prints its URL, serves until stdin closes."""
    with FakeUpstream(SCRIPT) as upstream:
        print(upstream.url, flush=True)
        sys.stdin.read()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run(requests: int, warmup: int) -> None:
    me = [sys.executable, __file__]
    upstream = subprocess.Popen([*me, "--upstream"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert upstream.stdout is not None
        upstream_url = upstream.stdout.readline().strip()
        with tempfile.TemporaryDirectory() as tmp:
            ups = {"openai": Upstream("openai", upstream_url, REAL_KEY)}
            with Gateway(GatewayConfig(mode="proxy", upstreams=ups, log_dir=Path(tmp) / "proxy")) as proxy_gw, \
                 Gateway(GatewayConfig(mode="scripted", log_dir=Path(tmp) / "scripted")) as scripted_gw, \
                 proxy_gw.trial("bench-proxy") as proxy_trial, scripted_gw.trial("bench-scripted", script=SCRIPT) as scripted_trial:
                plan = {"requests": requests, "warmup": warmup, "targets": {
                    "direct": [upstream_url + "/v1", REAL_KEY],
                    "proxy": [proxy_trial.openai_url, proxy_trial.token.secret],
                    "scripted": [scripted_trial.openai_url, scripted_trial.token.secret]}}
                done = subprocess.run([*me, "--client", json.dumps(plan)], capture_output=True, text=True, check=True)
    finally:
        upstream.communicate("")
    report(json.loads(done.stdout), requests, warmup)


def report(results: dict[str, dict[str, list[float]]], requests: int, warmup: int) -> None:
    print(f"{requests} requests per path and case after {warmup} warm-up; ms per request as the client sees it\n")
    print(f"{'case':<18}{'path':<10}{'median':>8}{'p95':>8}   overhead vs direct: median / p95 (ratio)")
    for case, samples in results.items():
        base_med, base_p95 = statistics.median(samples["direct"]), percentile(samples["direct"], 0.95)
        for name, values in samples.items():
            med, p95 = statistics.median(values), percentile(values, 0.95)
            extra = "" if name == "direct" else (f"   +{med - base_med:.2f} / +{p95 - base_p95:.2f} ms"
                                                 f"   (x{med / base_med:.2f} / x{p95 / base_p95:.2f})")
            print(f"{case:<18}{name:<10}{med:>8.2f}{p95:>8.2f}{extra}")
        print()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--warmup", type=int, default=40)
    parser.add_argument("--client", help=argparse.SUPPRESS)
    parser.add_argument("--upstream", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        client_main(args.client)
    elif args.upstream:
        upstream_main()
    else:
        run(args.requests, args.warmup)
