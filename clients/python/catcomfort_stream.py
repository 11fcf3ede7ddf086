"""A live stream client for the Cat Comfort service (GET /v2/stream; docs/api-v2.md "Live stream").

Needs websockets (requirements.txt). One connection: frames (JPEG, PNG or WebP bytes) go in, and the
service answers the newest frame it can, counting the ones it skipped.

    from catcomfort_stream import Stream
    with Stream("ws://127.0.0.1:8080", api_key="...", threshold=0.5) as stream:
        stream.send_frame(open("cat.jpg", "rb").read())
        print(stream.next_answer())          # {"type": "result", "seq": 1, "skipped": 0, "detection": ...}

A camera loop sends frames as they come and reads answers on another thread (or with
next_answer(timeout=0) between frames): the service never queues more than one waiting frame per
stream, so answers stay fresh however fast frames are sent.
"""
import json

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect


class StreamClosed(Exception):
    """The service closed the stream: `code` and `reason` as docs/api-v2.md's close codes say."""

    def __init__(self, code, reason):
        super().__init__(f"stream closed with {code}: {reason}")
        self.code = code
        self.reason = reason


class Stream:
    """One live stream. `base_url` is the service's (ws:// or wss://, or http(s)://, which is turned into ws(s)://)."""

    def __init__(self, base_url, api_key, model=None, pack_version=None, threshold=None, explain=False, max_answer_bytes=16 * 1024 * 1024):
        url = base_url.replace("http://", "ws://", 1).replace("https://", "wss://", 1).rstrip("/") + "/v2/stream"
        self._socket = connect(url, max_size=max_answer_bytes, compression=None)
        self._pending = []
        settings = {"api_key": api_key, "threshold": threshold, "explain": explain}
        if model is not None:
            settings["model"] = model
        if pack_version is not None:
            settings["pack_version"] = pack_version
        try:
            self.settings_answer = self._settings(settings)
        except Exception:
            self._socket.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send_frame(self, image_bytes):
        """Sends one frame; its sequence number is the count of frames sent so far."""
        self._guard(lambda: self._socket.send(bytes(image_bytes)))

    def change(self, **settings):
        """Changes settings (model, pack_version, threshold, explain) for the frames that follow; returns the service's settings answer.

        Answers of frames already sent may come first; they are kept for next_answer()."""
        return self._settings(settings)

    def next_answer(self, timeout=None):
        """The next result or error message (a dict), or None when none came within `timeout` seconds."""
        if self._pending:
            return self._pending.pop(0)
        try:
            return self._receive(timeout)
        except TimeoutError:
            return None

    def close(self):
        """Ends the stream normally (1000)."""
        self._socket.close(1000)

    def _settings(self, settings):
        self._guard(lambda: self._socket.send(json.dumps(settings)))
        while True:
            message = self._receive(None)
            if message.get("type") == "settings":
                return message
            if message.get("type") == "error" and message.get("seq") is None:
                raise ValueError(message["error"]["message"] + " " + json.dumps(message["error"].get("details", {})))
            self._pending.append(message)

    def _receive(self, timeout):
        return json.loads(self._guard(lambda: self._socket.recv(timeout)))

    def _guard(self, call):
        try:
            return call()
        except ConnectionClosed as closed:
            frame = closed.rcvd
            raise StreamClosed(frame.code if frame else 1006, frame.reason if frame else "the connection ended without a close frame") from None
