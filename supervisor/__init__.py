"""Runs the embedded service: the tansu broker (``broker``), supervised sub-processes
(``children``) and the whole service on one machine (``service``), behind ``auditstream up``.
"""
