/*
 * The lent-buffer table: linear probing, deletion by shifting back the
 * entries after a freed slot, so that no tombstone lengthens a probe.
 */
#include "hw/net/llan_rx_lent.h"

#include <string.h>

#define SLOT_MASK (LLAN_RX_LENT_SLOTS - 1)

/* Addresses are 8-byte aligned buffers plus 8: the low bits say little. */
static unsigned home_slot(uint64_t addr)
{
    return ((addr >> 3) * 0x9e3779b97f4a7c15ull) >> 51 & SLOT_MASK;
}

void llan_rx_lent_clear(LlanRxLent *t)
{
    memset(t->addr, 0, sizeof(t->addr));
    t->count = 0;
}

bool llan_rx_lent_put(LlanRxLent *t, uint64_t addr, uint64_t bd)
{
    unsigned i = home_slot(addr);

    if (t->count >= LLAN_RX_LENT_MAX) {
        return false;
    }
    while (t->addr[i]) {
        i = (i + 1) & SLOT_MASK;
    }
    t->addr[i] = addr;
    t->bd[i] = bd;
    t->count++;
    return true;
}

/* Whether the entry at @j, whose home is @home, may move to the free slot
 * @i: only if @home does not lie cyclically in (i, j]. */
static bool may_move(unsigned i, unsigned j, unsigned home)
{
    return i < j ? home <= i || home > j : home <= i && home > j;
}

static void free_slot(LlanRxLent *t, unsigned i)
{
    for (unsigned j = (i + 1) & SLOT_MASK; t->addr[j];
         j = (j + 1) & SLOT_MASK) {
        if (may_move(i, j, home_slot(t->addr[j]))) {
            t->addr[i] = t->addr[j];
            t->bd[i] = t->bd[j];
            i = j;
        }
    }
    t->addr[i] = 0;
    t->count--;
}

bool llan_rx_lent_take(LlanRxLent *t, uint64_t addr, uint64_t *bd)
{
    for (unsigned i = home_slot(addr); t->addr[i]; i = (i + 1) & SLOT_MASK) {
        if (t->addr[i] == addr) {
            *bd = t->bd[i];
            free_slot(t, i);
            return true;
        }
    }
    return false;
}

void llan_rx_lent_drain(LlanRxLent *t, void (*fn)(void *opaque, uint64_t bd),
                        void *opaque)
{
    for (unsigned i = 0; i < LLAN_RX_LENT_SLOTS; i++) {
        if (t->addr[i]) {
            fn(opaque, t->bd[i]);
        }
    }
    llan_rx_lent_clear(t);
}
