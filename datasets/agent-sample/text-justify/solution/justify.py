"""Full justification of text."""


def justify(text, width):
    """Lines of exactly `width` characters, fully justified; the last line left-aligned."""
    words = text.split()
    for word in words:
        if len(word) > width:
            raise ValueError("word %r is longer than the width %d" % (word, width))
    lines, current = [], []
    for word in words:
        if current and len(" ".join(current + [word])) > width:
            lines.append(current)
            current = []
        current.append(word)
    if current:
        lines.append(current)
    out = []
    for i, line in enumerate(lines):
        gaps = len(line) - 1
        if gaps == 0 or i == len(lines) - 1:
            out.append(" ".join(line).ljust(width))
            continue
        spaces = width - sum(len(w) for w in line)
        even, extra = divmod(spaces, gaps)
        pieces = []
        for g, word in enumerate(line[:-1]):
            pieces.append(word + " " * (even + (1 if g < extra else 0)))
        pieces.append(line[-1])
        out.append("".join(pieces))
    return out
