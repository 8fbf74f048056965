#!/usr/bin/env python3
"""Prints each case's layer notes from a `convscope-cli bench --json` file: which algorithm or engine ran."""
import json
import sys

for case in json.load(open(sys.argv[1])).get("cases", []):
    for sel in case["report"]["selections"]:
        for layer in sel.get("layers", []):
            print(f"{case['name']:<16} {sel['selection']:<20} {layer.get('note', '')}")
