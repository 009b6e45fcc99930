"""What the person sees: a pure text/HTML renderer and thin ipywidgets wrappers around it."""
