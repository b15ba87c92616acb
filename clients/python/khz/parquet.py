"""khz.parquet — a campaign's table as an Apache Parquet file, without pyarrow.

`khz campaign` writes runs.parquet with pyarrow when it imports; Debian 12
has no python3-pyarrow (nor fastparquet), so this module writes the same
small table itself, in the plainest form of the format every reader takes
(apache/parquet-format, Encodings.md and parquet.thrift):

- one row group; per column one data page (v1), PLAIN encoding, no
  compression, OPTIONAL (an empty cell is a null);
- definition levels (0 = null, 1 = a value) in the RLE / bit-packed hybrid
  encoding, bit width 1, as RLE runs only, behind their 4-byte length;
- values: INT64 and DOUBLE as 8 little-endian bytes, strings as BYTE_ARRAY
  (4-byte length, UTF-8 bytes) with the STRING logical type;
- the footer (FileMetaData, PageHeader) in Thrift's compact protocol.

tests/python/test_campaign.py reads the file back with an independent
reader (hyparquet, from npm) and compares every cell with runs.csv.
"""

import os
import struct

#: parquet.thrift's enums
_INT64, _DOUBLE, _BYTE_ARRAY = 2, 5, 6          # Type
_OPTIONAL = 1                                    # FieldRepetitionType
_PLAIN, _RLE = 0, 3                              # Encoding
_UNCOMPRESSED = 0                                # CompressionCodec
_DATA_PAGE = 0                                   # PageType
_UTF8 = 0                                        # ConvertedType
#: Thrift compact protocol's type codes
_CT_I32, _CT_I64, _CT_BINARY, _CT_LIST, _CT_STRUCT = 5, 6, 8, 9, 12

TYPES = ("int64", "double", "string")


# ---------------------------------------------- Thrift's compact protocol --
def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _zigzag(n):
    return (n << 1) ^ (n >> 63)


def _value(kind, v):
    """One value without a field header: kind is 'i32', 'i64', 'bin', 'struct'
    (v: a list of fields) or ('list', element kind) (v: the elements)."""
    if kind in ("i32", "i64"):
        return _varint(_zigzag(int(v)) & 0xFFFFFFFFFFFFFFFF)
    if kind == "bin":
        b = v.encode() if isinstance(v, str) else bytes(v)
        return _varint(len(b)) + b
    if kind == "struct":
        return _struct(v)
    elem = kind[1]
    code = {"i32": _CT_I32, "i64": _CT_I64, "bin": _CT_BINARY, "struct": _CT_STRUCT}[elem]
    head = bytes([(len(v) << 4) | code]) if len(v) < 15 else bytes([0xF0 | code]) + _varint(len(v))
    return head + b"".join(_value(elem, e) for e in v)


def _struct(fields):
    """fields: (id, kind, value) in increasing id order; a None value is left out."""
    out, last = bytearray(), 0
    for fid, kind, v in fields:
        if v is None:
            continue
        code = {"i32": _CT_I32, "i64": _CT_I64, "bin": _CT_BINARY,
                "struct": _CT_STRUCT}.get(kind, _CT_LIST)
        delta = fid - last
        if 0 < delta <= 15:
            out.append((delta << 4) | code)
        else:  # the long form: type, then the id as a zigzag i16
            out.append(code)
            out += _varint(_zigzag(fid))
        out += _value(kind, v)
        last = fid
    out.append(0)  # STOP
    return bytes(out)


# -------------------------------------------------------------- the pages --
def _levels(defined):
    """Definition levels, RLE runs of bit width 1 (a run: varint(len << 1), one byte)."""
    out, i = bytearray(), 0
    while i < len(defined):
        j = i
        while j < len(defined) and defined[j] == defined[i]:
            j += 1
        out += _varint((j - i) << 1) + bytes([1 if defined[i] else 0])
        i = j
    return struct.pack("<i", len(out)) + bytes(out)


def _plain(kind, values):
    if kind == "int64":
        return struct.pack(f"<{len(values)}q", *values)
    if kind == "double":
        return struct.pack(f"<{len(values)}d", *values)
    return b"".join(struct.pack("<i", len(b)) + b for b in (v.encode() for v in values))


def _convert(kind, cell, name, row):
    try:
        if kind == "int64":
            v = int(cell)
            if not -(1 << 63) <= v < (1 << 63):
                raise ValueError("out of the int64 range")
            return v
        if kind == "double":
            return float(cell)
    except (TypeError, ValueError) as e:
        raise ValueError(f"parquet: column {name!r}, row {row}: {cell!r} is not {kind} "
                         f"({e})") from None
    return str(cell)


def write_table(path, columns, types, rows, metadata=None, created_by="khz.parquet"):
    """Writes rows (mappings column -> cell; None or "" is a null) as a Parquet
    file. types[column] is "int64", "double" or "string". metadata: key ->
    value strings for the footer. Written to path + ".tmp", then renamed."""
    for c in columns:
        if types.get(c) not in TYPES:
            raise ValueError(f"parquet: column {c!r}: type {types.get(c)!r}, expected one of "
                             f"{', '.join(TYPES)}")
    body = bytearray(b"PAR1")
    chunks = []
    for c in columns:
        kind = types[c]
        cells = [r.get(c) for r in rows]
        defined = [v is not None and v != "" for v in cells]
        values = [_convert(kind, v, c, i) for i, (v, d) in enumerate(zip(cells, defined)) if d]
        data = _levels(defined) + _plain(kind, values)
        header = _struct([
            (1, "i32", _DATA_PAGE), (2, "i32", len(data)), (3, "i32", len(data)),
            (5, "struct", [(1, "i32", len(rows)), (2, "i32", _PLAIN), (3, "i32", _RLE),
                           (4, "i32", _RLE)])])
        offset = len(body)
        body += header + data
        size = len(header) + len(data)
        ptype = {"int64": _INT64, "double": _DOUBLE, "string": _BYTE_ARRAY}[kind]
        meta = [(1, "i32", ptype), (2, ("list", "i32"), [_PLAIN, _RLE]),
                (3, ("list", "bin"), [c]), (4, "i32", _UNCOMPRESSED), (5, "i64", len(rows)),
                (6, "i64", size), (7, "i64", size), (9, "i64", offset)]
        chunks.append((size, [(2, "i64", offset), (3, "struct", meta)]))
    schema = [[(4, "bin", "schema"), (5, "i32", len(columns))]]
    for c in columns:
        kind = types[c]
        ptype = {"int64": _INT64, "double": _DOUBLE, "string": _BYTE_ARRAY}[kind]
        el = [(1, "i32", ptype), (3, "i32", _OPTIONAL), (4, "bin", c)]
        if kind == "string":  # ConvertedType UTF8 and LogicalType STRING (field 1, empty)
            el += [(6, "i32", _UTF8), (10, "struct", [(1, "struct", [])])]
        schema.append(el)
    groups = []
    if rows:
        groups.append([(1, ("list", "struct"), [ch for _, ch in chunks]),
                       (2, "i64", sum(s for s, _ in chunks)), (3, "i64", len(rows))])
    kv = [[(1, "bin", str(k)), (2, "bin", str(v))] for k, v in (metadata or {}).items()]
    footer = _struct([(1, "i32", 1), (2, ("list", "struct"), schema), (3, "i64", len(rows)),
                      (4, ("list", "struct"), groups),
                      (5, ("list", "struct"), kv or None), (6, "bin", created_by)])
    if not rows:  # no row group: the column chunks are not part of the file
        body = bytearray(b"PAR1")
    body += footer + struct.pack("<i", len(footer)) + b"PAR1"
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(body)
    os.replace(tmp, path)
