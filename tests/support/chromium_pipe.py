"""Headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe).

No websocket client and no Playwright: Chromium reads JSON commands from fd 3 and writes
replies and events to fd 4, each message ended by a NUL byte. That is enough to load a page,
collect its console errors, measure elements and take a screenshot.
"""
from __future__ import annotations

import base64
import json
import os
import select
import subprocess
import time
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-pipe", "--window-size=1200,1600", "--hide-scrollbars"]


class Chromium:
    def __init__(self, user_data_dir: Path, timeout: float = 30.0):
        self.timeout = timeout
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def wire_fds():  # in the child: the protocol's fixed descriptors 3 (in) and 4 (out)
            high_r, high_w = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self.process = subprocess.Popen(
            [str(CHROMIUM), *FLAGS, f"--user-data-dir={user_data_dir}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            preexec_fn=wire_fds, pass_fds=(3, 4))  # kept open after wire_fds
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        reply = self._read_until(lambda m: m.get("id") == self._next_id)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def wait_for_event(self, method: str) -> dict:
        for event in self.events:
            if event.get("method") == method:
                return event
        return self._read_until(lambda m: m.get("method") == method)

    def open_page(self, url: str) -> str:
        """A new tab showing `url`, with console and log events on; returns its session id."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=session)
        self.send("Page.navigate", {"url": url}, session=session)
        self.wait_for_event("Page.loadEventFired")
        return session

    def evaluate(self, expression: str, session: str):
        reply = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                          session=session)
        return reply["result"].get("value")

    def screenshot(self, session: str) -> bytes:
        data = self.send("Page.captureScreenshot", {"format": "png"}, session=session)["data"]
        return base64.b64decode(data)

    def settle(self, quiet: float = 0.75, limit: float = 10.0) -> None:
        """Read events until none came for `quiet` seconds: console and CSP messages are
        reported asynchronously, some time after the load event."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self._from_chrome], [], [], quiet)
            if not ready:
                return
            chunk = os.read(self._from_chrome, 1 << 16)
            if not chunk:
                return
            self._buffer += chunk
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                message = json.loads(raw)
                if "method" in message:
                    self.events.append(message)

    def console_errors(self) -> list[str]:
        """Uncaught exceptions, console.error/assert, and browser log errors (CSP, loads)."""
        errors = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                errors.append(json.dumps(params.get("exceptionDetails", {}))[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                errors.append(json.dumps(params.get("args", []))[:500])
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                errors.append(params["entry"].get("text", "")[:500])
        return errors

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._to_chrome, self._from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass

    def _read_until(self, wanted) -> dict:
        deadline = time.monotonic() + self.timeout
        while True:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                message = json.loads(raw)
                if "method" in message:
                    self.events.append(message)
                if wanted(message):
                    return message
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no reply from Chromium in time")
            ready, _, _ = select.select([self._from_chrome], [], [], left)
            if ready:
                chunk = os.read(self._from_chrome, 1 << 16)
                if not chunk:
                    stderr = self.process.stderr.read().decode(errors="replace")[-2000:]
                    raise RuntimeError(f"Chromium closed the pipe; its stderr:\n{stderr}")
                self._buffer += chunk
