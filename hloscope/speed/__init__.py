"""Speed: everything that makes hloscope fast and nothing that decides an answer.

Lazy bodies and the full parse's verdict on them (lazy), bodies read as copies of bodies
read before (copies), a large text parsed in two processes (split, outline), a cache of
outlines and results by the text's hash (cache, plain), forked jobs, the cyclic GC and
memory handed back (runtime, executor), and the analyses' questions answered from the text
(facts). The IR and the analyses know none of it: the api layer calls `seam`, whose
functions each have a plain equivalent that gives the same answers (the IR read eagerly,
the plain `analysis.facts.Facts`).

Importing this package imports nothing else: the command line starts without the parser.
"""
