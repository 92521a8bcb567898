"""Minimal GGUF v2/v3 reader for the bad-input corpus (Python stdlib only).

It records where every field lives so a corpus case can patch one field in
place (a metadata value, a tensor offset, a block scale) and leave the rest of
a real llama.cpp-written file intact.
"""
import struct

# GGUF metadata value types -> struct format (strings and arrays handled apart).
SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
STRING, ARRAY = 8, 9
# ggml tensor types: (block elements, block bytes)
TYPES = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 8: (32, 34), 12: (256, 144), 30: (1, 2)}


class Gguf:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0
        assert self._take("<I") == 0x46554747, "not GGUF"
        self.version = self._take("<I")
        self.n_tensors_at = self.pos
        n_tensors = self._take("<Q")
        self.n_kv_at = self.pos
        n_kv = self._take("<Q")
        self.kv = {}  # key -> (type, value, value offset, key offset)
        for _ in range(n_kv):
            key_at = self.pos
            key = self._string()
            vtype = self._take("<I")
            value_at = self.pos
            self.kv[key] = (vtype, self._value(vtype), value_at, key_at)
        self.alignment = self.kv.get("general.alignment", (4, 32))[1]
        self.tensors = {}  # name -> dict(dims, type, offset, offset_at, info_at)
        self.order = []
        for _ in range(n_tensors):
            info_at = self.pos
            name = self._string()
            n_dims = self._take("<I")
            dims_at = self.pos
            dims = [self._take("<Q") for _ in range(n_dims)]
            type_at = self.pos
            ttype = self._take("<I")
            offset_at = self.pos
            offset = self._take("<Q")
            self.tensors[name] = dict(dims=dims, type=ttype, offset=offset, offset_at=offset_at,
                                      info_at=info_at, dims_at=dims_at, type_at=type_at)
            self.order.append(name)
        a = self.alignment
        self.data_offset = (self.pos + a - 1) // a * a

    def _take(self, fmt):
        v = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return v

    def _string(self):
        n = self._take("<Q")
        s = self.data[self.pos:self.pos + n]
        self.pos += n
        return s.decode("utf-8", "replace")

    def _value(self, vtype):
        if vtype == STRING:
            return self._string()
        if vtype == ARRAY:
            etype = self._take("<I")
            n = self._take("<Q")
            return [self._value(etype) for _ in range(n)]
        return self._take("<" + SCALAR[vtype])

    def tensor_bytes(self, name):
        t = self.tensors[name]
        elems, size = TYPES[t["type"]]
        n = 1
        for d in t["dims"]:
            n *= d
        return n // elems * size

    def tensor_at(self, name):
        """Absolute file offset of a tensor's data."""
        return self.data_offset + self.tensors[name]["offset"]


def patch(data: bytes, at: int, new: bytes) -> bytes:
    return data[:at] + new + data[at + len(new):]
