"""How much input one file may hold. Bytes alone do not bound the work: a small file can hold a deep
nest, one huge value, a table of mostly empty columns or many spans, so each has its own limit, and
each refusal is one InputError naming the file, the field and the limit."""

MAX_BYTES = 64 * 1024 * 1024  # a whole file
MAX_CANDIDATES = 200_000  # candidates in one file
MAX_SPANS = 200_000  # spans, observations or table rows of one logged-trace file
MAX_KEYS = 10_000  # keys of one span (its attributes flattened) or columns of one exported table
MAX_DEPTH = 100  # levels of nested lists and objects; the readers below recurse once or twice per level
MAX_FIELD_CHARS = 8 * 1024 * 1024  # one string value: about two million tokens, past any context window
MAX_DECODED_BYTES = 256 * 1024 * 1024  # a compressed table (parquet) once decoded, each repeated value counted
MAX_VALUES = 4_000_000  # values of one text file, counted before parsing by its commas, brackets and lines
FETCH_TIMEOUT = 10.0  # seconds to reach a tracing server and have its answer (fetch, "Open from...")
