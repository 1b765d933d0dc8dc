"""lowprec.app — the faces of lowprec: CLI, Panel/Bokeh widgets, plots, pages, server, export.

Only this package imports Panel or Bokeh; nothing imports it.
"""
