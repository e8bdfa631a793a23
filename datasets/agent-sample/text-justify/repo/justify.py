"""Full justification of text."""


def justify(text, width):
    """Lines of exactly `width` characters, fully justified; the last line left-aligned."""
    words = text.split()
    lines, current = [], []
    for word in words:
        if len(" ".join(current + [word])) > width:
            lines.append(current)
            current = []
        current.append(word)
    if current:
        lines.append(current)
    out = []
    for line in lines:
        gaps = len(line) - 1
        if gaps == 0:
            out.append(line[0].ljust(width))
            continue
        spaces = width - sum(len(w) for w in line)
        out.append((" " * (spaces // gaps)).join(line))
    return out
