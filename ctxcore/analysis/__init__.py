"""What a trace means: the sent context, reach, answer checks, explanations and the diagnosis.

sent (the passages of a logged prompt), reach (what a passage needs to reach the prompt), answer
(claims and citations), explain (fixes proved by re-running the engine) and diagnosis (the root
cause first). Analysis stands on io, the pipeline and the stages; replay and the CLI stand on it.
"""
