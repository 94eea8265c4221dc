/* An interrupt line: whoever drives it calls irq_set_level(); whoever is
 * attached (the interrupt controller, or qtest when it intercepts) gets the
 * level through a handler. */
#ifndef HW_IRQ_H
#define HW_IRQ_H

typedef void (*IrqHandler)(void *opaque, int n, int level);

typedef struct IrqLine {
    IrqHandler handler;
    void *opaque;
    int n;          /* the number the handler is told, e.g. the source */
} IrqLine;

static inline void irq_set_level(IrqLine *line, int level)
{
    if (line->handler) {
        line->handler(line->opaque, line->n, level);
    }
}

/* Edge-style interrupts (VIO devices) are a raise followed by a lower. */
static inline void irq_pulse(IrqLine *line)
{
    irq_set_level(line, 1);
    irq_set_level(line, 0);
}

#endif
