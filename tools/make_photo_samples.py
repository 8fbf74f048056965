#!/usr/bin/env python3
"""Write the photograph samples in resources/samples/ from the pictures scikit-image ships (developer tool).

Each picture is cropped to a centred square and resized to 128x128 (Lanczos), small enough to keep in the repository
and larger than any example network's input, which ConvScope resizes it to. The licences, as scikit-image's data
module states them, are recorded in packaging/copyright.in and resources/samples/README.md:
  astronaut.png  NASA photograph of Eileen Collins: public domain
  coffee.png     Rachel Michetti, courtesy of Pikolo Espresso Bar: CC0
  chelsea.png    Stefan van der Walt: CC0

    python3 -m venv venv && venv/bin/pip install scikit-image pillow
    venv/bin/python tools/make_photo_samples.py --out resources/samples
"""
import argparse
import os

import numpy as np
from PIL import Image
from skimage import data

PICTURES = ["astronaut", "coffee", "chelsea"]


def square(img):
    h, w = img.shape[:2]
    s = min(h, w)
    top, left = (h - s) // 2, (w - s) // 2
    return img[top:top + s, left:left + s]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="resources/samples")
    ap.add_argument("--size", type=int, default=128)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in PICTURES:
        img = Image.fromarray(np.ascontiguousarray(square(getattr(data, name)())))
        img = img.resize((args.size, args.size), Image.LANCZOS)
        path = os.path.join(args.out, name + ".png")
        img.save(path, optimize=True)
        print(path, img.size, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
