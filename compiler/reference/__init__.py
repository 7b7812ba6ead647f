"""Reference: torch.compile's knobs as data.

In: the installed torch (its backends, modes, config modules and their docs). Leaves: plain tables
(``knobs``) and the one check of user-given options every entry point uses (``options``).
"""
