"""The actor runtime: bounded mailboxes, request/answer envelopes, and running actors
in one nursery. No domain here: an actor's messages live in `stockade.messages`.
"""

from ..lazy import surface
from .lifetime import running as running
from .mailbox import Envelope as Envelope
from .mailbox import Inbox as Inbox
from .mailbox import Mailbox as Mailbox
from .mailbox import answer as answer
from .mailbox import answer_now as answer_now
from .mailbox import open_inbox as open_inbox
from .mailbox import request as request
from .mailbox import serve_forever as serve_forever

TYPE_CHECKING = False

if not TYPE_CHECKING:  # `__all__` is read from the imports above (stockade.lazy)
    __getattr__ = surface(__name__, globals())
