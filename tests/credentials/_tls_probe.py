"""Ask the proxy for a TLS connection and report the certificate that came back.

A script a confined command runs: `python _tls_probe.py FACE HOST PORT SNI [ALPN]`,
FACE `connect` (HTTP CONNECT) or `socks5`, SNI `-` for none, ALPN a comma list. It
goes through the call's proxy at 127.0.0.1:3128, shakes hands trusting nothing (so
whatever certificate is presented comes back), and prints one JSON line: the proxy's
answer, the handshake's outcome, the ALPN chosen, and the peer certificate (DER,
base64), for the test to judge who issued it and for which names.
"""

from __future__ import annotations

import base64
import json
import socket
import ssl
import sys

PROXY = ("127.0.0.1", 3128)


def tunnel(face: str, host: str, port: int) -> tuple[socket.socket, str]:
    sock = socket.create_connection(PROXY, timeout=15)
    if face == "connect":
        sock.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        reply = b""
        while b"\r\n\r\n" not in reply:
            chunk = sock.recv(4096)
            if not chunk:
                break
            reply += chunk
        return sock, reply.split(b"\r\n", 1)[0].decode(errors="replace")
    sock.sendall(b"\x05\x01\x00")
    sock.recv(2)
    name = host.encode()
    sock.sendall(b"\x05\x01\x00\x03" + bytes([len(name)]) + name + port.to_bytes(2, "big"))
    reply = sock.recv(10)
    return sock, f"socks5 reply {reply[1] if len(reply) > 1 else '?'}"


def main() -> None:
    face, host, port, sni = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    alpn = sys.argv[5].split(",") if len(sys.argv) > 5 else ["http/1.1"]
    report: dict[str, object] = {"probe": [face, host, port, sni, alpn]}
    sock, answer = tunnel(face, host, port)
    report["answer"] = answer
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(alpn)
    try:
        with context.wrap_socket(sock, server_hostname=None if sni == "-" else sni) as tls:
            der = tls.getpeercert(binary_form=True) or b""
            report["handshake"] = "ok"
            report["alpn"] = tls.selected_alpn_protocol()
            report["cert"] = base64.b64encode(der).decode()
    except (ssl.SSLError, OSError) as error:
        report["handshake"] = f"{type(error).__name__}: {error}"
    print("PROBE " + json.dumps(report))


if __name__ == "__main__":
    main()
