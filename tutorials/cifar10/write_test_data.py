#!/usr/bin/env python3
"""write_test_data.py FOLDER [RECORDS]: CIFAR-10's binary files (data_batch_1.bin ... data_batch_5.bin,
test_batch.bin) in FOLDER, each of RECORDS records (default 64) in CIFAR's layout: a label byte
(0-9), then 1024 red, 1024 green and 1024 blue bytes, rows of 32. Class c's images are brighter in
channel c % 3, so that a network can learn something from them. For the cifar10 tutorial's tests."""
import os
import random
import sys


def record(rng, label):
    image = bytearray(rng.randrange(0, 64) for _ in range(3072))
    channel = label % 3
    for i in range(1024):
        image[channel * 1024 + i] += 60 + label * 12
    return bytes([label]) + bytes(image)


def main():
    folder = sys.argv[1]
    records = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    rng = random.Random(7)
    os.makedirs(folder, exist_ok=True)
    for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
        with open(os.path.join(folder, name), "wb") as f:
            for r in range(records):
                f.write(record(rng, r % 10))


if __name__ == "__main__":
    main()
