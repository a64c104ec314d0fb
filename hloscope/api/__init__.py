"""The api layer: reading HLO into analysable modules (loading), the Module users get
(module), with the cache (cache) and the forking executor (runtime) wired in.

Nothing is imported here: the command line imports `runtime` alone at start-up, and must not
pay for the parser and the analyses before it knows it needs them.
"""
