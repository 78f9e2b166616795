"""The network room: the destination rules of `network: allowlist` (pure) and the
proxy that enforces them (a Trio shell), which the harness runs one of.

This is the room's public surface. Names load on first use, so importing the package
(or the pure rules) costs no event loop.
"""

from __future__ import annotations

from ..lazy import surface

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._authority import TRUST_VARIABLES as TRUST_VARIABLES
    from ._authority import CertificateAuthority as CertificateAuthority
    from ._authority import CertificateRefused as CertificateRefused
    from ._authority import Leaf as Leaf
    from ._authority import combined_bundle as combined_bundle
    from ._authority import system_bundle_path as system_bundle_path
    from ._authority import trust_environment as trust_environment
    from ._authority import write_bundle as write_bundle
    from ._broker import Broker as Broker
    from ._broker import OnRequest as OnRequest
    from ._broker import RequestRecord as RequestRecord
    from ._broker import make_broker as make_broker
    from ._broker import upstream_context as upstream_context
    from ._credentials import PLACEHOLDER_PREFIX as PLACEHOLDER_PREFIX
    from ._credentials import Credential as Credential
    from ._credentials import CredentialEvent as CredentialEvent
    from ._credentials import CredentialRule as CredentialRule
    from ._credentials import CredentialUsed as CredentialUsed
    from ._credentials import PlaceholderMisplaced as PlaceholderMisplaced
    from ._credentials import PlaceholderScanner as PlaceholderScanner
    from ._credentials import Secret as Secret
    from ._credentials import load_credentials as load_credentials
    from ._credentials import make_placeholder as make_placeholder
    from ._credentials import parse_credential_rule as parse_credential_rule
    from ._credentials import parse_credential_rules as parse_credential_rules
    from ._credentials import placeholder_environment as placeholder_environment
    from ._credentials import scan_target as scan_target
    from ._credentials import secret_variables as secret_variables
    from ._credentials import substitute_headers as substitute_headers
    from ._credentials import terminated_hosts as terminated_hosts
    from ._request_rules import RequestRule as RequestRule
    from ._request_rules import RequestVerdict as RequestVerdict
    from ._request_rules import Target as Target
    from ._request_rules import TargetError as TargetError
    from ._request_rules import decide_request as decide_request
    from ._request_rules import normalise_path as normalise_path
    from ._request_rules import normalise_target as normalise_target
    from ._request_rules import parse_request_rule as parse_request_rule
    from ._request_rules import parse_request_rules as parse_request_rules
    from ._trust_directory import BUNDLE_NAME as BUNDLE_NAME
    from ._trust_directory import make_trust_directory as make_trust_directory
    from ._trust_directory import remove_trust_directory as remove_trust_directory
    from ._trust_directory import trust_directory as trust_directory
    from .bridge import PROXY_PORT as PROXY_PORT
    from .bridge import UNIX_PATH_MAX as UNIX_PATH_MAX
    from .bridge import names_loopback as names_loopback
    from .bridge import proxy_environment as proxy_environment
    from .bridge import socket_parent as socket_parent
    from .proxy import ConnectionBudget as ConnectionBudget
    from .proxy import Endpoint as Endpoint
    from .proxy import NetworkProxy as NetworkProxy
    from .proxy import open_proxy as open_proxy
    from .rules import ACCEPTED as ACCEPTED
    from .rules import Decision as Decision
    from .rules import Entry as Entry
    from .rules import HostError as HostError
    from .rules import RuleError as RuleError
    from .rules import Rules as Rules
    from .rules import Verdict as Verdict
    from .rules import normalise_host as normalise_host
    from .rules import parse_entry as parse_entry


if not TYPE_CHECKING:  # the names above are read as text (stockade.lazy)
    __getattr__ = surface(__name__, globals())
