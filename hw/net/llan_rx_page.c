/*
 * Legacy page-mode receive buffers.  A scan reads the slots after its
 * pointer one at a time, since the next one almost always answers, and
 * copies the rest of the page in one go only when those do not: so the
 * usual add or take reads 8 bytes, not 4 KiB, and no scan costs more
 * than eight slot reads, one page copy and 509 steps whatever the guest
 * wrote.
 */
#include "hw/net/llan_rx_page.h"
#include "hw/net/llan_bd.h"
#include "qemu/bswap.h"
#include "trace/trace-hw_net.h"

#include <string.h>

/* Copying the 4 KiB page was 34 % of the guest's time per frame under
 * load, one copy per add and per take; a slot read is one translation. */
#define SLOTS_READ_SINGLY   8

/* A pointer that is not a slot (never set by us, but a migration stream
 * could carry one) restarts the ring at its first slot. */
static uint32_t next_slot(uint32_t ptr)
{
    if (ptr % 8 || ptr < LLAN_PAGE_SLOTS_START - 8 ||
        ptr >= LLAN_PAGE_SLOTS_END) {
        return LLAN_PAGE_SLOTS_START;
    }
    ptr += 8;
    return ptr >= LLAN_PAGE_SLOTS_END ? LLAN_PAGE_SLOTS_START : ptr;
}


static bool write_slot(SpaprVioDevice *dev, uint64_t buf_list, uint32_t ptr,
                       uint64_t bd)
{
    uint8_t be[8];

    stn_be_p(be, 8, bd);
    return spapr_vio_dma_write(dev, buf_list + ptr, be, sizeof(be));
}

/* An empty slot for an add, or a buffer of at least @need for a take. */
static bool slot_answers(uint64_t bd, bool want_buffer, uint32_t need)
{
    if (!want_buffer) {
        return !(bd & LLAN_BD_VALID);
    }
    return (bd & LLAN_BD_VALID) && LLAN_BD_LEN(bd) >= need;
}

/* The first slot after *ptr that answers: its BD in *bd and *ptr on it;
 * neither is touched otherwise. */
static LlanPageResult find_slot(SpaprVioDevice *dev, uint64_t buf_list,
                                uint32_t *ptr, bool want_buffer,
                                uint32_t need, uint64_t *bd)
{
    uint8_t page[LLAN_PAGE_SLOTS_END], be[8];
    uint32_t at = *ptr;
    uint64_t slot;

    for (int i = 0; i < LLAN_PAGE_SLOTS; i++) {
        at = next_slot(at);
        if (i < SLOTS_READ_SINGLY) {
            if (!spapr_vio_dma_read(dev, buf_list + at, be, sizeof(be))) {
                return LLAN_PAGE_DMA_ERROR;
            }
            slot = ldn_be_p(be, 8);
        } else {
            if (i == SLOTS_READ_SINGLY &&
                !spapr_vio_dma_read(dev, buf_list, page, sizeof(page))) {
                return LLAN_PAGE_DMA_ERROR;
            }
            slot = ldn_be_p(page + at, 8);
        }
        if (want_buffer) {
            trace_spapr_vlan_get_rx_bd_from_page(at, slot);
        }
        if (slot_answers(slot, want_buffer, need)) {
            *bd = slot;
            *ptr = at;
            return LLAN_PAGE_OK;
        }
    }
    return LLAN_PAGE_NONE;
}

LlanPageResult llan_rx_page_add(SpaprVioDevice *dev, uint64_t buf_list,
                                uint32_t *add_ptr, uint64_t bd)
{
    uint32_t at = *add_ptr;
    uint64_t old;
    LlanPageResult r = find_slot(dev, buf_list, &at, false, 0, &old);

    if (r != LLAN_PAGE_OK) {
        return r;
    }
    if (!write_slot(dev, buf_list, at, bd)) {
        return LLAN_PAGE_DMA_ERROR;
    }
    *add_ptr = at;
    return LLAN_PAGE_OK;
}

LlanPageResult llan_rx_page_take_first_fit(SpaprVioDevice *dev,
                                           uint64_t buf_list,
                                           uint32_t *use_ptr, uint32_t need,
                                           uint64_t *bd)
{
    uint32_t at = *use_ptr;
    LlanPageResult r = find_slot(dev, buf_list, &at, true, need, bd);

    if (r != LLAN_PAGE_OK) {
        return r;
    }
    if (!write_slot(dev, buf_list, at, 0)) {
        return LLAN_PAGE_DMA_ERROR;
    }
    *use_ptr = at;
    return LLAN_PAGE_OK;
}

LlanPageResult llan_rx_page_count(SpaprVioDevice *dev, uint64_t buf_list,
                                  uint32_t *count)
{
    uint8_t page[LLAN_PAGE_SLOTS_END];

    if (!spapr_vio_dma_read(dev, buf_list, page, sizeof(page))) {
        return LLAN_PAGE_DMA_ERROR;
    }
    *count = 0;
    for (uint32_t at = LLAN_PAGE_SLOTS_START; at < LLAN_PAGE_SLOTS_END;
         at += 8) {
        *count += !!(ldn_be_p(page + at, 8) & LLAN_BD_VALID);
    }
    return LLAN_PAGE_OK;
}

void llan_rx_page_clear_slot(SpaprVioDevice *dev, uint64_t buf_list,
                             uint32_t ptr)
{
    write_slot(dev, buf_list, ptr, 0);
}
