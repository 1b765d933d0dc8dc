"""lowprec.simulations — the phenomena as pure functions over numpy (torch only for autograd).

Imports `formats` only (never `app`, Panel or Bokeh); every result is a dataclass with `to_dict()`.
"""
