"""A Tk counter: "+1", "-1" and "Reset" buttons; the window title reads "counter: N".

Widgets sit at fixed pixel positions (``place``) so a task's scripted solution does not depend on
the fonts installed. Run: ``python counter.py``.
"""

import tkinter as tk


def main() -> None:
    root = tk.Tk(className="pixelrl-counter")
    root.geometry("320x160+0+0")
    count = tk.IntVar(value=0)

    def show() -> None:
        root.title(f"counter: {count.get()}")
        label.configure(text=str(count.get()))

    def add(delta: int) -> None:
        count.set(count.get() + delta)
        show()

    label = tk.Label(root, text="0", font=("TkDefaultFont", 24))
    label.place(x=0, y=10, width=320, height=50)
    tk.Button(root, text="-1", command=lambda: add(-1)).place(x=20, y=80, width=80, height=40)
    tk.Button(root, text="+1", command=lambda: add(1)).place(x=120, y=80, width=80, height=40)
    tk.Button(root, text="Reset", command=lambda: (count.set(0), show())).place(
        x=220, y=80, width=80, height=40
    )
    show()
    root.mainloop()


if __name__ == "__main__":
    main()
