"""khz.errors — the exceptions of the khz client, each with a message a
person can act on (which endpoint was tried, what the server said, which
names exist)."""


class KhzError(Exception):
    """Base class of every error raised by the khz package."""


class ServerNotRunning(KhzError, ConnectionError):
    """No khz-server accepted the connection at the endpoint tried."""

    def __init__(self, message: str, endpoint: str):
        super().__init__(message)
        self.endpoint = endpoint


class Timeout(KhzError, TimeoutError):
    """Connected, but nothing arrived within the timeout."""


class ProtocolMismatch(KhzError):
    """The server speaks another version of the wire protocol."""


class MalformedReply(KhzError):
    """A message that is not valid khz.v1 (or not self-consistent)."""


class RequestRefused(KhzError):
    """The server answered a request with an error code."""

    def __init__(self, message: str, code: int, code_name: str):
        super().__init__(message)
        self.code = code
        self.code_name = code_name


class UnknownName(KhzError, LookupError):
    """A joint, body or proxy name the model does not have."""

    def __str__(self) -> str:  # LookupError would quote the message
        return str(self.args[0]) if self.args else ""


class NotConnected(KhzError):
    """A command could not be sent: no server is connected (it is dropped,
    never queued for later)."""
