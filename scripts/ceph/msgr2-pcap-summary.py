#!/usr/bin/env python3
"""msgr2-pcap-summary.py FILE.pcap...

Print what a tcpdump capture of Ceph msgr2 traffic contains, as a cross-check
of our test vectors (testdata/captures): one block per TCP connection (client
port -> server port), the two banners (supported/required protocol features),
then every frame in time order with its direction, tag, segment lengths and,
where cheap, a few decoded fields (HELLO entity type, AUTH_DONE con_mode,
MESSAGE type/seq/lengths). Preamble and segment crc32c values are checked
(a bad segment CRC is flagged).

Only plain frames are decoded: msgr2.1 (rev1) in crc mode, and in secure mode
everything up to AUTH_DONE. The first frame whose preamble CRC does not match
(secure mode: AES-GCM after the switch) ends the walk of that direction and is
reported as "encrypted ... N bytes". msgr2.0 (rev0) peers are
not handled. Starts nothing; reads only the given files. Python 3 stdlib only.
Assumes one capture of lo (Ethernet link type, IPv4, no lost packets).
"""
import struct
import sys

TAGS = {
    1: "HELLO", 2: "AUTH_REQUEST", 3: "AUTH_BAD_METHOD", 4: "AUTH_REPLY_MORE",
    5: "AUTH_REQUEST_MORE", 6: "AUTH_DONE", 7: "AUTH_SIGNATURE", 8: "CLIENT_IDENT",
    9: "SERVER_IDENT", 10: "IDENT_MISSING_FEATURES", 11: "SESSION_RECONNECT",
    12: "SESSION_RESET", 13: "SESSION_RETRY", 14: "SESSION_RETRY_GLOBAL",
    15: "SESSION_RECONNECT_OK", 16: "WAIT", 17: "MESSAGE", 18: "KEEPALIVE2",
    19: "KEEPALIVE2_ACK", 20: "ACK", 21: "COMPRESSION_REQUEST", 22: "COMPRESSION_DONE",
}
MSG_TYPES = {
    4: "MON_MAP", 5: "MON_GET_MAP", 13: "STATFS", 14: "STATFS_REPLY",
    15: "MON_SUBSCRIBE", 16: "MON_SUBSCRIBE_ACK", 17: "AUTH", 18: "AUTH_REPLY",
    19: "MON_GET_VERSION", 20: "MON_GET_VERSION_REPLY", 41: "OSD_MAP", 42: "OSD_OP",
    43: "OSD_OPREPLY", 44: "WATCH_NOTIFY", 50: "MON_COMMAND", 51: "MON_COMMAND_ACK",
    52: "LOG", 53: "LOGACK", 61: "OSD_BACKOFF", 62: "CONFIG", 63: "GET_CONFIG",
    0x704: "MGR_MAP",
}
ENTITY = {1: "mon", 2: "mds", 4: "osd", 8: "client", 16: "mgr", 32: "auth"}
CON_MODE = {1: "crc", 2: "secure"}
BANNER = b"ceph v2\n"


def read_pcap(path):
    """Yield (time, src, sport, dst, dport, flags, seq, payload) of TCP/IPv4 packets."""
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic in (0xA1B2C3D4, 0xA1B23C4D):
        end = "<"
    else:
        end = ">"
        magic = struct.unpack_from(">I", data, 0)[0]
    nsec = magic == 0xA1B23C4D
    linktype = struct.unpack_from(end + "I", data, 20)[0]
    if linktype != 1:
        sys.exit(f"{path}: link type {linktype}, only Ethernet (1) is handled")
    off = 24
    while off + 16 <= len(data):
        sec, frac, incl, _orig = struct.unpack_from(end + "IIII", data, off)
        pkt = data[off + 16: off + 16 + incl]
        off += 16 + incl
        t = sec + frac / (1e9 if nsec else 1e6)
        if len(pkt) < 14 or struct.unpack_from(">H", pkt, 12)[0] != 0x0800:
            continue
        ip = pkt[14:]
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack_from(">H", ip, 2)[0]
        if ip[9] != 6:
            continue
        src, dst = ".".join(map(str, ip[12:16])), ".".join(map(str, ip[16:20]))
        tcp = ip[ihl:total]
        sport, dport, seq = struct.unpack_from(">HHI", tcp, 0)
        doff = (tcp[12] >> 4) * 4
        flags = tcp[13]
        yield t, src, sport, dst, dport, flags, seq, bytes(tcp[doff:])


class Stream:
    """One direction of a TCP connection, reassembled by sequence number."""

    def __init__(self):
        self.isn = None
        self.chunks = {}      # relative offset -> payload
        self.times = []       # (relative offset, time) of each data packet

    def add(self, t, flags, seq, payload):
        if flags & 0x02:      # SYN
            self.isn = seq + 1
            return
        if not payload or self.isn is None:
            return
        rel = (seq - self.isn) % (1 << 32)
        if rel not in self.chunks:
            self.chunks[rel] = payload
            self.times.append((rel, t))

    def data(self):
        out = bytearray()
        for rel in sorted(self.chunks):
            p = self.chunks[rel]
            if rel > len(out):
                raise ValueError(f"gap in TCP stream at offset {len(out)}")
            out += p[len(out) - rel:]
        return bytes(out)

    def time_at(self, offset):
        best = None
        for rel, t in sorted(self.times):
            if rel <= offset:
                best = t
        return best if best is not None else 0.0


def parse_banner(buf):
    if not buf.startswith(BANNER):
        raise ValueError("no 'ceph v2' banner")
    (plen,) = struct.unpack_from("<H", buf, 8)
    sup, req = struct.unpack_from("<QQ", buf, 10)
    return sup, req, 10 + plen


def describe(tag, segs):
    """A few decoded fields of a plain frame."""
    s0 = segs[0]
    try:
        if tag == 1 and len(s0) >= 1:            # HELLO: entity type, peer addr
            return f"entity_type={ENTITY.get(s0[0], s0[0])}"
        if tag == 2 and len(s0) >= 4:            # AUTH_REQUEST: method, ...
            return f"method={struct.unpack_from('<I', s0, 0)[0]}"
        if tag == 6 and len(s0) >= 12:           # AUTH_DONE: global_id, con_mode
            gid, mode = struct.unpack_from("<QI", s0, 0)
            return f"global_id={gid} con_mode={CON_MODE.get(mode, mode)}"
        if tag == 17 and len(s0) >= 41:          # MESSAGE: ceph_msg_header2
            seq, tid, mtype, prio, ver = struct.unpack_from("<QQHHH", s0, 0)
            ack_seq = struct.unpack_from("<Q", s0, 8 + 8 + 2 + 2 + 2 + 4 + 2)[0]
            name = MSG_TYPES.get(mtype, "?")
            return (f"type={mtype}({name}) v{ver} seq={seq} tid={tid} ack_seq={ack_seq} "
                    f"front={len(segs[1]) if len(segs) > 1 else 0} "
                    f"middle={len(segs[2]) if len(segs) > 2 else 0} "
                    f"data={len(segs[3]) if len(segs) > 3 else 0}")
        if tag in (18, 19) and len(s0) >= 8:
            return "stamp=%d.%09d" % struct.unpack_from("<II", s0, 0)
        if tag == 20 and len(s0) >= 8:
            return f"seq={struct.unpack_from('<Q', s0, 0)[0]}"
        if tag == 21 and len(s0) >= 1:
            return f"is_compress={s0[0]}"
    except struct.error:
        pass
    return ""


def _crc_table():
    tab = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        tab.append(c)
    return tab


CRC_TABLE = _crc_table()


def ceph_crc32c(seed, data):
    """Ceph's ceph_crc32c(): CRC-32C update from seed, no pre/post inversion."""
    c = seed
    for b in data:
        c = CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c


def parse_frames(buf, pos, rev1):
    """Yield (offset, tag, [segments], note) for the plain frames from pos on.

    A frame is taken as plain when its preamble crc32c is valid; the first one
    that is not (secure mode after AUTH_DONE) ends the walk with tag None.
    """
    while pos < len(buf):
        if len(buf) - pos < 32:
            yield pos, None, [], f"truncated: {len(buf) - pos} bytes left"
            return
        pre = buf[pos: pos + 32]
        if ceph_crc32c(0, pre[:28]) != struct.unpack_from("<I", pre, 28)[0]:
            yield pos, None, [], f"encrypted (preamble crc does not match) from here: {len(buf) - pos} bytes"
            return
        if not rev1:
            yield pos, None, [], "msgr2.0 (rev0) framing: not decoded"
            return
        tag, nseg = pre[0], pre[1]
        lens = [struct.unpack_from("<I", pre, 2 + 6 * i)[0] for i in range(nseg)]
        start, p, segs, bad = pos, pos + 32, [], []
        if lens[0] > 0:
            segs.append(buf[p: p + lens[0]])
            if ceph_crc32c(0xFFFFFFFF, segs[0]) != struct.unpack_from("<I", buf, p + lens[0])[0]:
                bad.append(0)
            p += lens[0] + 4                        # segment 0 + its crc32c
        else:
            segs.append(b"")
        if nseg > 1:
            for ln in lens[1:]:
                segs.append(buf[p: p + ln])
                p += ln
            # epilogue: late_status u8 + crc32c of segments 1..3
            crcs = struct.unpack_from("<III", buf, p + 1) if p + 13 <= len(buf) else ()
            for i, crc in enumerate(crcs[: nseg - 1], start=1):
                if ceph_crc32c(0xFFFFFFFF, segs[i]) != crc:
                    bad.append(i)
            p += 13
        if p > len(buf):
            yield start, tag, segs, "truncated frame"
            return
        yield start, tag, segs, f"BAD CRC in segment(s) {bad}" if bad else ""
        pos = p


def summarize(path):
    streams, conns = {}, []
    for t, src, sport, dst, dport, flags, seq, payload in read_pcap(path):
        key = (src, sport, dst, dport)
        if flags & 0x02 and not flags & 0x10 and key not in streams:   # SYN: new connection
            conns.append((key, t))
            streams[key] = Stream()
            streams[(dst, dport, src, sport)] = Stream()
        if key in streams:
            streams[key].add(t, flags, seq, payload)
    print(f"== {path}: {len(conns)} connection(s)")
    for (src, sport, dst, dport), t0 in conns:
        c2s, s2c = streams[(src, sport, dst, dport)], streams[(dst, dport, src, sport)]
        dirs = [("C>S", c2s, c2s.data()), ("S>C", s2c, s2c.data())]
        print(f"-- {src}:{sport} -> {dst}:{dport}  start {t0:.6f}  "
              f"client sent {len(dirs[0][2])} B, server sent {len(dirs[1][2])} B")
        parsed, rev1 = [], True
        for name, st, buf in dirs:
            try:
                sup, req, pos = parse_banner(buf)
            except (ValueError, struct.error) as e:
                print(f"   {name}: {e}")
                continue
            print(f"   {name} banner: supported={sup} required={req}")
            rev1 = rev1 and bool(sup & 1)
            parsed.append((name, st, buf, pos))
        out = []
        for name, st, buf, pos in parsed:
            for off, tag, segs, note in parse_frames(buf, pos, rev1):
                if tag is None:
                    out.append((st.time_at(off), off, name, note))
                    continue
                lens = "+".join(str(len(x)) for x in segs)
                text = f"{TAGS.get(tag, tag):<20} segs={lens:<12} {describe(tag, segs)} {note}"
                out.append((st.time_at(off), off, name, text.rstrip()))
        for t, _off, name, text in sorted(out, key=lambda e: (e[0], e[2], e[1])):
            print(f"   {t - t0:9.6f} {name} {text}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for p in sys.argv[1:]:
        summarize(p)
