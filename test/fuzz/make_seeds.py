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
  cifar           a format byte (0 CIFAR-10, 1 CIFAR-100 coarse, 3 fine), then records of label
                  byte(s) and 3072 image bytes
  image           a flag byte (0 gray, 1 color, 2 as stored), then PNGs (RGB, RGBA, 16-bit gray,
                  palette) and two 8x8 JPEGs (color 4:2:0 and gray, quality 75, made once with
                  mx::image::imencode)
  image_list      im2rec .lst files: as --list writes them, several labels, CRLF and CR line ends,
                  spaces around fields, and lines the reader refuses
  trainer_states  Trainer::save_states files for fuzz_trainer_states.cpp's two Trainers (SGD with
                  momentum; Adam with float16 masters, a FactorScheduler and a loss scaler), saved
                  on one or two contexts, and near misses
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


# --- image --------------------------------------------------------------------------------------
def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(width, height, depth, color, rows, extra=b""):
    ihdr = struct.pack(">IIBBBBB", width, height, depth, color, 0, 0, 0)
    raw = b"".join(b"\0" + r for r in rows)
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + extra + png_chunk(b"IDAT", zlib.compress(raw))
            + png_chunk(b"IEND", b""))


rgb_rows = [bytes([255, 0, 0, 0, 255, 0, 0, 0, 255]), bytes([10, 20, 30, 200, 100, 50, 128, 128, 128])]
rgba_rows = [bytes([255, 0, 0, 9, 0, 255, 0, 99, 0, 0, 255, 199])]
JPEG_COLOR = bytes.fromhex(
    "ffd8ffe000104a46494600010100000100010000ffdb004300080606070605080707070909080a0c140d0c0b0b0c1912"
    "130f141d1a1f1e1d1a1c1c20242e2720222c231c1c2837292c30313434341f27393d38323c2e333432ffdb0043010909"
    "090c0b0c180d0d1832211c21323232323232323232323232323232323232323232323232323232323232323232323232"
    "3232323232323232323232323232ffc00011080008000803012200021101031101ffc4001f0000010501010101010100"
    "000000000000000102030405060708090a0bffc400b5100002010303020403050504040000017d010203000411051221"
    "31410613516107227114328191a1082342b1c11552d1f02433627282090a161718191a25262728292a3435363738393a"
    "434445464748494a535455565758595a636465666768696a737475767778797a838485868788898a9293949596979899"
    "9aa2a3a4a5a6a7a8a9aab2b3b4b5b6b7b8b9bac2c3c4c5c6c7c8c9cad2d3d4d5d6d7d8d9dae1e2e3e4e5e6e7e8e9eaf1"
    "f2f3f4f5f6f7f8f9faffc4001f0100030101010101010101010000000000000102030405060708090a0bffc400b51100"
    "020102040403040705040400010277000102031104052131061241510761711322328108144291a1b1c109233352f015"
    "6272d10a162434e125f11718191a262728292a35363738393a434445464748494a535455565758595a63646566676869"
    "6a737475767778797a82838485868788898a92939495969798999aa2a3a4a5a6a7a8a9aab2b3b4b5b6b7b8b9bac2c3c4"
    "c5c6c7c8c9cad2d3d4d5d6d7d8d9dae2e3e4e5e6e7e8e9eaf2f3f4f5f6f7f8f9faffda000c03010002110311003f004b"
    "f78f47d2e2d1acbca7ba9c01200c4155e38e3d475e7a7fbc0d14515db96d2857a3edea2bca6eeffc97925a233ab8dc46"
    "05468e1a6e2b95376eadabb6ff002f45deedff00ffd9")
JPEG_GRAY = bytes.fromhex(
    "ffd8ffe000104a46494600010100000100010000ffdb004300080606070605080707070909080a0c140d0c0b0b0c1912"
    "130f141d1a1f1e1d1a1c1c20242e2720222c231c1c2837292c30313434341f27393d38323c2e333432ffc0000b080008"
    "000801011100ffc4001f0000010501010101010100000000000000000102030405060708090a0bffc400b51000020103"
    "03020403050504040000017d01020300041105122131410613516107227114328191a1082342b1c11552d1f024336272"
    "82090a161718191a25262728292a3435363738393a434445464748494a535455565758595a636465666768696a737475"
    "767778797a838485868788898a92939495969798999aa2a3a4a5a6a7a8a9aab2b3b4b5b6b7b8b9bac2c3c4c5c6c7c8c9"
    "cad2d3d4d5d6d7d8d9dae1e2e3e4e5e6e7e8e9eaf1f2f3f4f5f6f7f8f9faffda0008010100003f00e76dbe1bf4fdc7e9"
    "5fffd9")
for flag in (0, 1):
    write("image", "png_rgb_%d" % flag, bytes([flag]) + png(3, 2, 8, 2, rgb_rows))
    write("image", "jpeg_color_%d" % flag, bytes([flag]) + JPEG_COLOR)
write("image", "png_rgba", b"\1" + png(3, 1, 8, 6, rgba_rows))
write("image", "png_gray16", b"\0" + png(2, 1, 16, 0, [b"\x12\x34\xab\xcd"]))
write("image", "png_palette", b"\1" + png(2, 1, 8, 3, [b"\0\1"], png_chunk(b"PLTE", bytes([1, 2, 3, 4, 5, 6]))))
write("image", "jpeg_gray", b"\1" + JPEG_GRAY)
write("image", "jpeg_gray_as_stored", b"\2" + JPEG_GRAY)
write("image", "png_gray16_as_stored", b"\2" + png(2, 1, 16, 0, [b"\x12\x34\xab\xcd"]))


# --- image_list ---------------------------------------------------------------------------------
write("image_list", "as_written", "0\t0.000000\tcat/a.png\n4\t1.000000\tdog/b.jpg\n2\t0.000000\tcat/c.JPEG\n")
write("image_list", "several_labels", "7\t0.5\t-2\t1e3\tinf\tnan\tdeep/folder/x.png\n+8\t1\t2\ty.png\n")
write("image_list", "line_ends_and_spaces", " 1 \t 3.25 \t a b.png \r\n\r\n2\t1\tc.png\r3\t-0\td.png")
write("image_list", "bad_index", "1.5\t1\ta.png\n")
write("image_list", "bad_label", "0\tdog\ta.png\n")
write("image_list", "no_path", "0\t1\n")


# --- cifar --------------------------------------------------------------------------------------
image3072 = bytes(range(256)) * 12
write("cifar", "cifar10_two", b"\0" + b"\3" + image3072 + b"\x09" + image3072[::-1])
write("cifar", "cifar100_coarse", b"\1" + b"\x13\x63" + image3072)
write("cifar", "cifar100_fine", b"\3" + b"\x00\x63" + image3072)
write("cifar", "cifar10_label_out_of_range", b"\0" + b"\x0a" + image3072)


# --- trainer_states -----------------------------------------------------------------------------
def states_file(entries):
    """An NDArray file of (name, record) pairs."""
    return ndlist([r for _, r in entries], [n for n, _ in entries])


i64 = lambda *xs: v2([len(xs)], 6, struct.pack("<%dq" % len(xs), *xs))
f64 = lambda x: v2([1], 1, struct.pack("<d", x))
text = lambda s: v2([len(s)], 3, s.encode())
f32s = lambda shape, *xs: v2(shape, 0, f32(*xs))


def copy(p, c, states, count, updates, master=None):
    out = [("params.%d.%d.state.%s" % (p, c, name), record) for name, record in states]
    if master is not None:
        out.append(("params.%d.%d.master" % (p, c), master))
    return out + [("params.%d.%d.count" % (p, c), i64(count)), ("params.%d.%d.num_update" % (p, c), i64(updates))]


def sgd_states(copies=1):
    out = [("trainer_states_version", i64(1)), ("optimizer", text("sgd")), ("num_states", i64(1)),
           ("num_update", i64(2)), ("learning_rate", f64(0.01)), ("params.0.name", text("w"))]
    for c in range(copies):
        out += copy(0, c, [("mom", f32s([3, 2], 1, 2, 3, 4, 5, 6))], 0, 2)
    out.append(("params.1.name", text("b")))
    for c in range(copies):
        out += copy(1, c, [("mom", f32s([2], -1, 1))], 0, 2)
    return out + [("params.2.name", text("frozen"))]


def adam_states():
    return [("trainer_states_version", i64(1)), ("optimizer", text("adam")), ("num_states", i64(2)),
            ("num_update", i64(3)), ("learning_rate", f64(0.0005)), ("lr_scheduler", text("FactorScheduler")),
            ("lr_scheduler_base_lr", f64(0.0005)), ("lr_scheduler_position", i64(2)), ("loss_scaler", f64(32768.0)),
            ("loss_scaler_counts", i64(3, 1)), ("params.0.name", text("h"))] + \
        copy(0, 0, [("mean", f32s([2, 2], 0.1, 0.2, 0.3, 0.4)), ("var", f32s([2, 2], 0.01, 0.02, 0.03, 0.04))], 3, 3,
             master=f32s([2, 2], 1, -1, 0.5, 2)) + \
        [("params.1.name", text("c"))] + \
        copy(1, 0, [("mean", f32s([2], 0.1, 0.2)), ("var", f32s([2], 0.01, 0.02))], 3, 3)


write("trainer_states", "sgd", states_file(sgd_states()))
write("trainer_states", "sgd_two_copies", states_file(sgd_states(copies=2)))
write("trainer_states", "sgd_never_stepped", states_file(
    [e for e in sgd_states() if not e[0].startswith("params.") or e[0].endswith(".name")]))
write("trainer_states", "adam_scheduler_scaler", states_file(adam_states()))
# Near misses: another version, a state of the wrong shape, a parameter missing, a cut file.
write("trainer_states", "version_2", states_file([("trainer_states_version", i64(2))] + sgd_states()[1:]))
write("trainer_states", "wrong_shape", states_file(
    [(n, f32s([2, 3], 1, 2, 3, 4, 5, 6) if n == "params.0.0.state.mom" else r) for n, r in sgd_states()]))
write("trainer_states", "missing_parameter", states_file([e for e in sgd_states() if not e[0].startswith("params.2")]))
write("trainer_states", "cut", states_file(adam_states())[:300])
