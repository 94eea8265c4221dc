/*
 * Legacy page-mode receive buffers.  Each scan reads the whole page once
 * through the TCE table and walks a host copy, so a scan costs one
 * translation and at most 509 steps whatever the guest wrote.
 */
#include "hw/net/llan_rx_page.h"

#include <string.h>

#define BD_VALID    0x8000000000000000ULL
#define BD_LEN(bd)  ((uint32_t)((bd) >> 32) & 0xFFFFFF)

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

static uint64_t slot_bd(const uint8_t *page, uint32_t ptr)
{
    uint64_t bd = 0;

    for (int i = 0; i < 8; i++) {
        bd = (bd << 8) | page[ptr + i];
    }
    return bd;
}

static bool write_slot(SpaprVioDevice *dev, uint64_t buf_list, uint32_t ptr,
                       uint64_t bd)
{
    uint8_t be[8];

    for (int i = 7; i >= 0; i--, bd >>= 8) {
        be[i] = bd & 0xff;
    }
    return spapr_vio_dma_write(dev, buf_list + ptr, be, sizeof(be));
}

LlanPageResult llan_rx_page_add(SpaprVioDevice *dev, uint64_t buf_list,
                                uint32_t *add_ptr, uint64_t bd)
{
    uint8_t page[LLAN_PAGE_SLOTS_END];
    uint32_t ptr = *add_ptr;

    if (!spapr_vio_dma_read(dev, buf_list, page, sizeof(page))) {
        return LLAN_PAGE_DMA_ERROR;
    }
    for (int i = 0; i < LLAN_PAGE_SLOTS; i++) {
        ptr = next_slot(ptr);
        if (!(slot_bd(page, ptr) & BD_VALID)) {
            if (!write_slot(dev, buf_list, ptr, bd)) {
                return LLAN_PAGE_DMA_ERROR;
            }
            *add_ptr = ptr;
            return LLAN_PAGE_OK;
        }
    }
    return LLAN_PAGE_NONE;
}

LlanPageResult llan_rx_page_take_first_fit(SpaprVioDevice *dev,
                                           uint64_t buf_list,
                                           uint32_t *use_ptr, uint32_t need,
                                           uint64_t *bd)
{
    uint8_t page[LLAN_PAGE_SLOTS_END];
    uint32_t ptr = *use_ptr;

    if (!spapr_vio_dma_read(dev, buf_list, page, sizeof(page))) {
        return LLAN_PAGE_DMA_ERROR;
    }
    for (int i = 0; i < LLAN_PAGE_SLOTS; i++) {
        uint64_t candidate;

        ptr = next_slot(ptr);
        candidate = slot_bd(page, ptr);
        if ((candidate & BD_VALID) && BD_LEN(candidate) >= need) {
            if (!write_slot(dev, buf_list, ptr, 0)) {
                return LLAN_PAGE_DMA_ERROR;
            }
            *bd = candidate;
            *use_ptr = ptr;
            return LLAN_PAGE_OK;
        }
    }
    return LLAN_PAGE_NONE;
}

void llan_rx_page_clear_slot(SpaprVioDevice *dev, uint64_t buf_list,
                             uint32_t ptr)
{
    write_slot(dev, buf_list, ptr, 0);
}
