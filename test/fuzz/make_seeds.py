#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into corpus/<target>/ (run from anywhere).

Seeds are small valid inputs of each format, plus a few near misses, so that the fuzzer starts
inside the formats rather than having to discover their magic numbers:
  parameter_file  MXNet NDArray files (V2 dict, V3 0-d, V1, legacy, a list) and ndgluon's format
  idx             header + images + labels parts, as fuzz_idx.cpp reads them
  symbol_json     symbol JSON as MXNet 1.x and ndgluon's export write it
  cli             NUL-separated command lines of train_fashion_mnist
  recordio        MXNet .rec files (one label, several labels, a record cut in two parts around the
                  magic number), alone or after "IDX\n" and an .idx and a NUL
"""
import gzip
import json
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


# --- parameter_file -----------------------------------------------------------------------------
def v2(shape, flag, payload, magic=0xF993FAC9):
    out = struct.pack("<Ii", magic, 0) + struct.pack("<i", len(shape))
    out += b"".join(struct.pack("<q", d) for d in shape)
    return out + struct.pack("<iii", 1, 0, flag) + payload


def v1(shape, flag, payload):
    out = struct.pack("<Ii", 0xF993FAC8, len(shape)) + b"".join(struct.pack("<q", d) for d in shape)
    return out + struct.pack("<iii", 1, 0, flag) + payload


def legacy(shape, flag, payload):
    out = struct.pack("<I", len(shape)) + b"".join(struct.pack("<I", d) for d in shape)
    return out + struct.pack("<iii", 1, 0, flag) + payload


def ndlist(records, names):
    out = struct.pack("<QQQ", 0x112, 0, len(records)) + b"".join(records)
    out += struct.pack("<Q", len(names)) + b"".join(struct.pack("<Q", len(n)) + n.encode() for n in names)
    return out


f32 = lambda *xs: struct.pack("<%df" % len(xs), *xs)
write("parameter_file", "mxnet_v2_dict", ndlist(
    [v2([2, 3], 0, f32(1, 2, 3, 4, 5, 6)), v2([2], 0, f32(-1, 1))], ["arg:dense0_weight", "arg:dense0_bias"]))
write("parameter_file", "mxnet_dtypes", ndlist(
    [v2([2], 1, struct.pack("<2d", 1.5, -2)), v2([3], 2, struct.pack("<3H", 0x3C00, 0, 0xBC00)),
     v2([2], 3, bytes([7, 255])), v2([2], 4, struct.pack("<2i", -3, 9)), v2([1], 6, struct.pack("<q", 1 << 40)),
     v2([2], 12, struct.pack("<2H", 0x3F80, 0xC000))], ["a", "b", "c", "d", "e", "f"]))
write("parameter_file", "mxnet_v3_scalar", ndlist([v2([], 0, f32(2.5), magic=0xF993FACA)], ["aux:scale"]))
write("parameter_file", "mxnet_none", ndlist([v2([], 0, b"")], ["empty"]))
write("parameter_file", "mxnet_v1", ndlist([v1([2, 2], 0, f32(1, 2, 3, 4))], ["w"]))
write("parameter_file", "mxnet_legacy", ndlist([legacy([3], 0, f32(1, 2, 3))], ["b"]))
write("parameter_file", "mxnet_list", ndlist([v2([1], 0, f32(1))], []))
body = b"NDGLUONP" + struct.pack("<II", 1, 2)
for name, shape, values in [("0.weight", [2, 2], f32(1, 2, 3, 4)), ("0.bias", [2], f32(0, 1))]:
    body += struct.pack("<I", len(name)) + name.encode() + struct.pack("<BI", 0, len(shape))
    body += b"".join(struct.pack("<q", d) for d in shape) + struct.pack("<Q", len(values)) + values
write("parameter_file", "ndgluon_v1", body + struct.pack("<I", zlib.crc32(body)))
# The same with a last byte that asks the target to recompute the checksum (fuzz_parameter_file.cpp).
write("parameter_file", "ndgluon_v1_fix_crc", body + b"\0\0\0\0\x01")

# --- idx ----------------------------------------------------------------------------------------
def idx_input(flags, num_samples, images, labels):
    return bytes([flags, num_samples]) + struct.pack("<H", len(images)) + images + labels


images3 = struct.pack(">IIII", 2051, 3, 28, 28) + bytes(range(256)) * 9 + bytes(28 * 28 * 3 - 256 * 9)
labels3 = struct.pack(">II", 2049, 3) + bytes([0, 9, 4])
write("idx", "train_gzipped_here", idx_input(0b111, 255, images3, labels3))
write("idx", "test_two_samples", idx_input(0b110, 2, images3, labels3))

write("idx", "raw_gzip_files", idx_input(0b001, 255, gzip.compress(images3, mtime=0), gzip.compress(labels3, mtime=0)))
write("idx", "wrong_magic", idx_input(0b111, 255, labels3, images3))
write("idx", "not_gzip", idx_input(0b000, 255, images3[:40], labels3))

# --- symbol_json --------------------------------------------------------------------------------
def graph(nodes, heads, version=True):
    g = {"nodes": nodes, "arg_nodes": [i for i, n in enumerate(nodes) if n["op"] == "null"],
         "node_row_ptr": list(range(len(nodes) + 1)), "heads": heads}
    if version:
        g["attrs"] = {"mxnet_version": ["int", 10901]}
    return json.dumps(g, indent=1)


var = lambda name, **attrs: {"op": "null", "name": name, "attrs": attrs, "inputs": []} if attrs else \
    {"op": "null", "name": name, "inputs": []}
write("symbol_json", "mlp", graph([
    var("data"), var("dense0_weight", __shape__="(256, 784)"), var("dense0_bias", __shape__="(256,)"),
    {"op": "FullyConnected", "name": "dense0_fwd", "attrs": {"num_hidden": "256", "flatten": "True", "no_bias": "False"},
     "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]]},
    {"op": "Activation", "name": "relu0", "attrs": {"act_type": "relu"}, "inputs": [[3, 0, 0]]},
    var("dense1_weight", __shape__="(10, 256)"), var("dense1_bias", __shape__="(10,)"),
    {"op": "FullyConnected", "name": "dense1_fwd", "attrs": {"num_hidden": "10"},
     "inputs": [[4, 0, 0], [5, 0, 0], [6, 0, 0]]},
    var("softmax_label"),
    {"op": "SoftmaxOutput", "name": "softmax", "attrs": {"normalization": "batch"}, "inputs": [[7, 0, 0], [8, 0, 0]]},
], [[9, 0, 0]]))
write("symbol_json", "lenet", graph([
    var("data", __shape__="(0, 1, 28, 28)", __dtype__="0"), var("c_weight"), var("c_bias"),
    {"op": "Convolution", "name": "conv0", "attrs": {"kernel": "(5, 5)", "num_filter": "6", "pad": "(2, 2)",
                                                     "stride": "(1, 1)", "layout": "NCHW"},
     "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]]},
    var("g"), var("b"), var("m"), var("v"),
    {"op": "BatchNorm", "name": "bn0", "attrs": {"eps": "1e-05", "momentum": "0.9", "fix_gamma": "False"},
     "inputs": [[3, 0, 0], [4, 0, 0], [5, 0, 0], [6, 0, 0], [7, 0, 0]]},
    {"op": "Activation", "name": "sig", "attrs": {"act_type": "sigmoid"}, "inputs": [[8, 0, 0]]},
    {"op": "Pooling", "name": "pool0", "attrs": {"kernel": "(2, 2)", "stride": "(2, 2)", "pool_type": "avg"},
     "inputs": [[9, 0, 0]]},
    {"op": "Dropout", "name": "drop0", "attrs": {"p": "0.5"}, "inputs": [[10, 0, 0]]},
    {"op": "Flatten", "name": "flat0", "inputs": [[11, 0, 0]]},
    {"op": "softmax", "name": "sm", "attrs": {"axis": "-1"}, "inputs": [[12, 0, 0]]},
], [[13, 0, 0]]))
write("symbol_json", "scalars", graph([
    var("x"), {"op": "_plus_scalar", "name": "p", "attrs": {"scalar": "3.0"}, "inputs": [[0, 0, 0]]},
    {"op": "_rminus_scalar", "name": "q", "attrs": {"scalar": "1.5"}, "inputs": [[1, 0, 0]]},
    {"op": "LeakyReLU", "name": "a", "attrs": {"act_type": "leaky", "slope": "0.1"}, "inputs": [[2, 0, 0]]},
    {"op": "broadcast_add", "name": "s", "inputs": [[3, 0, 0], [0, 0, 0]]},
    {"op": "sum", "name": "r", "attrs": {"axis": "(1,)", "keepdims": "True"}, "inputs": [[4, 0, 0]]},
], [[5, 0, 0], [3, 0, 0]], version=False))
write("symbol_json", "old_param_keys", '{"nodes": [{"op": "null", "name": "data", "param": {}, "inputs": []}, '
      '{"op": "Activation", "name": "a", "param": {"act_type": "tanh"}, "inputs": [[0, 0]]}], "heads": [[1, 0]]}')

# --- cli ----------------------------------------------------------------------------------------
for name, args in {
    "defaults": [],
    "everything": ["--ctx", "cpu", "--model", "mlp", "--epochs", "3", "--lr", "0.5", "--batch-size", "64",
                   "--subset", "512", "--dtype", "bfloat16", "--csv", "out.csv", "--data", "."],
    "equals_forms": ["--epochs=2", "--lr=1e-3", "--model=both", "--dtype=float16"],
    "help": ["--batch-size", "0", "--help"],
    "gpus": ["--gpus", "1"],
    "bad_values": ["--epochs", "0", "--lr", "nan", "--ctx", "gpu:99"],
}.items():
    write("cli", name, "\0".join(args))

# --- recordio -----------------------------------------------------------------------------------
MAGIC = 0xced7230a


def part(cflag, data):
    return struct.pack("<II", MAGIC, cflag << 29 | len(data)) + data + b"\0" * ((4 - len(data) % 4) % 4)


def ir(flag, label, id_, id2, payload):
    return struct.pack("<IfQQ", flag, label, id_, id2) + payload


one = ir(0, 3.0, 0, 0, b"JPEG bytes")
several = ir(3, 0.0, 5, 9, struct.pack("<3f", 1.5, -2.0, 7.0) + b"PNG")
magic_record = ir(0, 1.0, 2, 0, b"abcd" + struct.pack("<I", MAGIC) + b"xyz")
rec = part(0, one) + part(0, several)
split_at = len(rec)
rec += part(1, magic_record[:28]) + part(3, magic_record[32:])
write("recordio", "three_records", rec)
write("recordio", "one_record", part(0, one))
write("recordio", "indexed", b"IDX\n0\t0\n5\t44\n2\t%d\n\0" % split_at + rec)
write("recordio", "indexed_past_end", b"IDX\n0\t0\n1\t999\n\0" + part(0, one))
