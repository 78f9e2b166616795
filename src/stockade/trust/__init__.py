"""The trust base: whether a file a later decision trusts could have been written by a
confined command, from `stat` facts alone. Standard library only.
"""
