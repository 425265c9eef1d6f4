"""The TCP sockets a process tree listens on, read from Linux's ``/proc`` (no extra package).

Why: ``qbeast serve`` promises to open only the sockets it announces, on the interface it was
given; the tests check every listening socket of the server's processes (the Python driver, its
JVM and Spark's Python workers), not just the two ports it names.
"""
from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterable
from pathlib import Path

#: /proc/net/tcp's state column for a listening socket.
_LISTEN = "0A"


def process_tree(root: int) -> list[int]:
    """``root`` and every process below it (from each process's parent in /proc/PID/stat)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # the command name (field 2) may hold spaces and parentheses: split after its last ")"
        fields = stat[stat.rindex(")") + 2:].split()
        parents[int(entry.name)] = int(fields[1])
    tree, frontier = [root], [root]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier]
        tree += children
        frontier = children
    return tree


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[len("socket:["):-1])
    except OSError:
        pass
    return inodes


def _address(hex_address: str, family: int) -> str:
    raw = bytes.fromhex(hex_address)
    if family == socket.AF_INET:
        return str(ipaddress.IPv4Address(raw[::-1]))
    # IPv6: four 32-bit words, each in host (little-endian) order
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
    address = ipaddress.IPv6Address(words)
    # a JVM's dual-stack sockets: an IPv4 address mapped into IPv6, or "::" for every interface
    if address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return "0.0.0.0" if address == ipaddress.IPv6Address("::") else str(address)


def listening(root: int) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket in the LISTEN state owned by ``root``'s tree; IPv4
    addresses mapped into IPv6 are given as IPv4, and "::" as "0.0.0.0" (every interface)."""
    inodes: set[str] = set()
    for pid in process_tree(root):
        inodes |= _socket_inodes(pid)
    found = set()
    for table, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state != _LISTEN or inode not in inodes:
                continue
            address, port = local.split(":")
            found.add((_address(address, family), int(port, 16)))
    return found


def spark_rpc_answers(host: str, ports: Iterable[int]) -> dict[int, str]:
    """:func:`spark_rpc_answer` of each port, all probed at once: a port that is no Spark RPC
    port stays silent until the timeout, and a process has several of them."""
    from concurrent.futures import ThreadPoolExecutor

    ordered = sorted(set(ports))
    with ThreadPoolExecutor(max_workers=max(1, len(ordered))) as pool:
        return dict(zip(ordered, pool.map(lambda port: spark_rpc_answer(host, port), ordered)))


def spark_rpc_answer(host: str, port: int, timeout: float = 3.0) -> str:
    """What a Spark RPC server on ``port`` answers a client that has no secret.

    The client sends one ``RpcRequest`` frame of Spark's transport protocol (frame length, message
    type 3, request id, body length, body) and reads the reply. Returns ``"refused: ..."`` when
    the server answers with its authentication handshake's failure (the request never reached
    Spark's dispatcher), ``"answered: ..."`` when any handler behind the handshake processed it
    (an unauthenticated server: its handlers reply, even to this body), ``"closed"`` when the
    connection ends or stays silent (not a Spark RPC port, e.g. py4j's gateway).
    """
    import struct

    body = b"\xac\xed\x00\x05qbeast-test-probe"
    message = struct.pack(">bqi", 3, 42, len(body)) + body
    reply = b""
    try:
        with socket.create_connection((host, port), timeout=timeout) as client:
            client.sendall(struct.pack(">q", 8 + len(message)) + message)
            while len(reply) < 8 or len(reply) < struct.unpack(">q", reply[:8])[0]:
                chunk = client.recv(65536)
                if not chunk:
                    break
                reply += chunk
    except OSError:
        pass
    if len(reply) < 9:
        return "closed"
    kind = reply[8]
    text = ""
    if kind == 5 and len(reply) >= 21:  # RpcFailure: request id, then the error as a string
        (length,) = struct.unpack(">i", reply[17:21])
        text = reply[21:21 + length].decode(errors="replace")
    first = text.splitlines()[0] if text else f"message type {kind}"
    if kind == 5 and ("SaslMessage" in text or "authentication" in text.lower()):
        return f"refused: {first}"
    if kind in (4, 5):
        return f"answered: {first}"
    return "closed"
