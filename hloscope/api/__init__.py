"""The api layer: reading HLO into analysable modules (loading), the Module users get
(module), and comparing two (compare), each through hloscope.speed for how fast.

Nothing is imported here: the command line starts without the parser and the analyses.
"""
