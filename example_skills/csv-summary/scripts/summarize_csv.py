#!/usr/bin/env python3
"""Print a JSON profile of a CSV file: rows, columns, inferred types, empties, numeric stats."""

from __future__ import annotations

import argparse
import csv
import json
import sys


def infer_number(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def profile(path: str, delimiter: str, max_rows: int) -> dict:
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle, delimiter=delimiter)
        header = next(reader, [])
        columns = [{"name": name, "values": []} for name in header]
        rows = ragged = 0
        for record in reader:
            if rows >= max_rows:
                break
            rows += 1
            if len(record) != len(header):
                ragged += 1
                continue
            for column, value in zip(columns, record):
                column["values"].append(value.strip())
    summary = []
    for column in columns:
        values = column["values"]
        filled = [v for v in values if v]
        numbers = [n for n in (infer_number(v) for v in filled) if n is not None]
        entry = {"name": column["name"], "empty": len(values) - len(filled)}
        if filled and len(numbers) == len(filled):
            entry.update(type="number", min=min(numbers), max=max(numbers), mean=round(sum(numbers) / len(numbers), 4))
        else:
            entry["type"] = "text"
        summary.append(entry)
    return {"rows": rows, "ragged_rows": ragged, "columns": summary}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("path")
    parser.add_argument("--delimiter", default=",")
    parser.add_argument("--max-rows", type=int, default=100_000)
    args = parser.parse_args(argv)
    try:
        result = profile(args.path, args.delimiter, args.max_rows)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        print(f"error: cannot profile {args.path}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
