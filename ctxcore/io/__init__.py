"""Input and output: reading candidates and traces, the logged-trace formats, the trace's JSON Schema.

reading (bytes to rows, bounded), loaders (a file to a Loaded run), loaded, tracefile (a trace read
back), schema, limits, inspect, and formats/ (one module per logged-trace family). io may build a run
(pipeline) and use the stages and records; it never imports analysis or replay.
"""
