"""An in-process stand-in for ticketd nodes that speaks the HTTP contract the
client relies on: reservations of increasing ranges, problem documents, 503 +
Retry-After, the leader hint, Snowflake batches. Not Raft: the tests here are
about the client's behaviour; real clusters are the conformance harness's job.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Tuple

P = "urn:ticketd:problem:"

# A scripted answer: (status, headers, body dict)
Scripted = Tuple[int, Dict[str, str], Dict[str, Any]]


def problem(status: int, kind: str, detail: str = "", **extra: Any) -> Scripted:
    headers = {"Retry-After": "1"} if status == 503 else {}
    return status, headers, dict({"type": P + kind, "title": kind, "status": status, "detail": detail}, **extra)


class Cluster:
    """The shared state of the stand-in nodes: one counter per sequence, so the
    ranges increase whichever node answers."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sequences: Dict[str, Dict[str, int]] = {}
        self.namespaces: Dict[str, int] = {}  # next Snowflake id per namespace
        self.nodes: List["Node"] = []

    def node(self, **kw: Any) -> "Node":
        n = Node(self, len(self.nodes), **kw)
        self.nodes.append(n)
        return n

    def addrs(self) -> List[str]:
        return [n.url for n in self.nodes]

    def close(self) -> None:
        for n in self.nodes:
            n.close()


class Node:
    def __init__(self, cluster: Cluster, index: int, tls: Optional[Any] = None) -> None:
        self.cluster = cluster
        self.index = index
        self.lock = threading.Lock()
        self.script: List[Scripted] = []  # answers to give before serving normally
        self.hook: Optional[Callable[[str, str], Optional[Scripted]]] = None  # (method, path) -> answer or None
        self.leader_hint: Optional[str] = None
        # When set, a request without "Authorization: Bearer <it>" gets 401, as a node's token file says.
        self.token: Optional[str] = None
        self.requests: List[Tuple[str, str, Dict[str, str], Any]] = []
        node = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def _answer(self, status: int, headers: Dict[str, str], body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                ctype = "application/problem+json" if status >= 400 else "application/json"
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                if node.leader_hint:
                    self.send_header("X-Ticketd-Leader", node.leader_hint)
                self.end_headers()
                self.wfile.write(data)

            def _handle(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                body = json.loads(raw) if raw else None
                with node.lock:
                    node.requests.append((self.command, self.path, dict(self.headers), body))
                    denied = node.token is not None and self.headers.get("Authorization") != "Bearer " + node.token
                    scripted = node.script.pop(0) if node.script and not denied else None
                    hook = node.hook
                if denied:
                    self._answer(*problem(401, "unauthorized", "unknown bearer token"))
                    return
                if scripted is None and hook is not None:
                    scripted = hook(self.command, self.path)
                if scripted is not None:
                    if scripted[0] == 0:  # drop the connection without an answer
                        self.close_connection = True
                        self.connection.shutdown(2)
                        return
                    self._answer(*scripted)
                    return
                self._answer(*node.serve(self.command, self.path, body))

            do_GET = do_POST = do_PUT = do_DELETE = _handle

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that hung up (close() shuts sockets down) is routine here

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        scheme = "http"
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        self.netloc = f"127.0.0.1:{self.server.server_address[1]}"
        self.url = f"{scheme}://{self.netloc}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), name="standin", daemon=True)
        self.thread.start()

    def serve(self, method: str, path: str, body: Any) -> Scripted:
        c = self.cluster
        m = re.fullmatch(r"/v1/sequences/([^/]+)/ranges", path)
        if m and method == "POST":
            name, count = m.group(1), body["count"]
            with c.lock:
                s = c.sequences.get(name)
                if s is None:
                    return problem(404, "sequence-not-found", f"no sequence {name}")
                if s["next"] + count - 1 > s["max"]:
                    return problem(409, "sequence-exhausted", f"{s['max'] - s['next'] + 1} left")
                first = s["next"]
                s["next"] += count
            return 200, {}, {"sequence": name, "first": first, "last": first + count - 1}
        m = re.fullmatch(r"/v1/sequences/([^/]+)", path)
        if m and method == "PUT":
            name = m.group(1)
            start, mx = (body or {}).get("start", 1), (body or {}).get("max", 2**63 - 1)
            with c.lock:
                s = c.sequences.get(name)
                if s is not None:
                    if (s["start"], s["max"]) != (start, mx):
                        return problem(409, "conflict", "other settings")
                    return 200, {}, self._info(name, s)
                s = c.sequences[name] = {"start": start, "max": mx, "next": start}
                return 201, {}, self._info(name, s)
        if m and method == "GET":
            with c.lock:
                s = c.sequences.get(m.group(1))
                if s is None:
                    return problem(404, "sequence-not-found")
                return 200, {}, self._info(m.group(1), s)
        m = re.fullmatch(r"/v1/namespaces/([^/]+)/ids", path)
        if m and method == "POST":
            ns, count = m.group(1), (body or {}).get("count", 1)
            with c.lock:
                if ns not in c.namespaces:
                    return problem(404, "namespace-not-found")
                first = c.namespaces[ns]
                c.namespaces[ns] += count
            ids = list(range(first, first + count))
            return 201, {}, {"namespace": ns, "node": f"n{self.index}", "worker_id": self.index,
                             "ids": ids, "ids_text": [str(i) for i in ids]}
        return problem(404, "route-not-found")

    @staticmethod
    def _info(name: str, s: Dict[str, int]) -> Dict[str, Any]:
        nxt = s["next"] if s["next"] <= s["max"] else None
        return {"name": name, "next": nxt, "start": s["start"], "max": s["max"],
                "remaining": s["max"] - s["next"] + 1}

    def range_requests(self) -> List[Any]:
        with self.lock:
            return [r for r in self.requests if r[1].endswith("/ranges")]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
