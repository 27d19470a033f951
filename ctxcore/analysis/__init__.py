"""What a trace means: the sent context, reach, answer checks, explanations and the diagnosis.

sent (the passages of a logged prompt), reach (what a passage needs to reach the prompt), answer
(claims and citations), explain (fixes proved by re-running the engine), policy (the rules the logged
pipeline appears to follow), findings (what a diagnosis is made of), causes (causes in the pipeline's own
terms), notes (consequences and context) and diagnosis (the root cause first). Analysis stands on io, the pipeline and the stages; replay and the CLI stand on it.
"""
