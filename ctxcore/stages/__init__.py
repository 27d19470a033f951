"""The stages of context construction, one module each, in the order the pipeline runs them.

tokens (counting), similarity and wordsets (near-dedup's measures and its fast join), dedup, merge,
filters, budget, select, compress, order, fold and assemble (labels and the prompt), and state (the
one record the stages pass along). A stage imports the records layer and other stages, never the
pipeline, io, analysis or replay.
"""
