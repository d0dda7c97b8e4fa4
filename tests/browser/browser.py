"""One headless Chromium for many pages, driven over the DevTools protocol on a pipe.

Starting Chromium costs about two seconds; the report checks open a dozen pages, so they share one
browser (--remote-debugging-pipe: JSON messages ending in NUL, read on fd 3, written on fd 4).
Plain Python 3, no dependencies.
"""
import base64
import fcntl
import json
import os
import subprocess
import tempfile
import time

CHROMIUM = os.environ.get("HEADSCAN_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--no-default-browser-check", "--disable-sync",
    "--disable-extensions", "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
    # Nothing the pages ask for could resolve anyway.
    "--host-resolver-rules=MAP * ~NOTFOUND",
]


class Browser:
    def __init__(self, timeout=60):
        self.timeout = timeout
        self.profile = tempfile.TemporaryDirectory(prefix="headscan-chromium-")
        to_browser_read, self.to_browser = os.pipe()
        self.from_browser, from_browser_write = os.pipe()

        def as_fds_3_and_4():
            # Out of the way first, so that neither end is overwritten by the other's dup2.
            read_end = fcntl.fcntl(to_browser_read, fcntl.F_DUPFD, 10)
            write_end = fcntl.fcntl(from_browser_write, fcntl.F_DUPFD, 10)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        self.process = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={self.profile.name}", "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            # Python's own descriptors are close-on-exec; fds 3 and 4, made by dup2, are inherited.
            preexec_fn=as_fds_3_and_4, close_fds=False)
        os.close(to_browser_read)
        os.close(from_browser_write)
        self.buffer = b""
        self.next_id = 0
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

    def close(self):
        try:
            self.call("Browser.close")
        except (RuntimeError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self.to_browser)
        os.close(self.from_browser)
        self.profile.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _message(self, deadline):
        while b"\0" not in self.buffer:
            if time.monotonic() > deadline:
                raise RuntimeError("Chromium did not answer in time")
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError(f"Chromium exited ({self.process.poll()})")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, params=None, session=False):
        self.next_id += 1
        request = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            request["sessionId"] = self.session
        os.write(self.to_browser, json.dumps(request).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._message(deadline)
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=True)
        return result.get("result", {}).get("value")

    def open(self, url, width=1300, height=900):
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session=True)
        self.call("Page.navigate", {"url": url}, session=True)

    def wait_for_json(self, expression, accept, what):
        """Polls `expression` (text) until it parses as JSON that `accept` takes; returns it."""
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            try:
                text = self.evaluate(expression)
                value = json.loads(text) if text else None
            except (RuntimeError, ValueError):  # between documents, or not written yet
                value = None
            if value is not None and accept(value):
                return value
            time.sleep(0.05)
        raise RuntimeError(f"timed out waiting for {what}")

    def wait_for(self, expression, what):
        """Polls `expression` in the page until it is truthy; returns its value."""
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(expression)
            except RuntimeError:  # the page is between documents
                value = None
            if value:
                return value
            time.sleep(0.05)
        raise RuntimeError(f"timed out waiting for {what}")

    def screenshot(self, url, path, width=1300, height=2400):
        self.open(url, width, height)
        self.wait_for("document.readyState === 'complete' && "
                      "Array.prototype.every.call(document.images, function (i) { return i.complete; })",
                      f"{url} to load")
        data = self.call("Page.captureScreenshot", {"format": "png"}, session=True)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
