#!/usr/bin/env python3
"""Print a Markdown summary of a CSV file: row count and the total of each numeric column."""

import csv
import sys


def main(path: str) -> None:
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    print(f"# Summary of {path}\n")
    print(f"Rows: {len(rows)}\n")
    for column in rows[0].keys() if rows else []:
        try:
            total = sum(float(r[column]) for r in rows)
        except ValueError:
            continue
        print(f"- Total {column}: {total:g}")


if __name__ == "__main__":
    main(sys.argv[1])
