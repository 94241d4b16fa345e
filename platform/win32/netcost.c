/*
 * netcost.c — whether the connection is metered (platform.h, "Network
 * cost"), for installer.defer_on "metered": the network list manager's cost
 * of the machine's connectivity (INetworkCostManager::GetCost with no
 * destination), the figure Windows Update and the Store defer on. Fixed or
 * variable cost (a connection set as metered, a mobile plan), roaming or
 * over the data limit is metered; unrestricted or unknown is not
 * (platform_cost_metered, in platform/powercost.c).
 */
#include "platform/win32/win32_int.h"

#include <stdio.h>

#define COBJMACROS
#include <netlistmgr.h>
#include <objbase.h>

/* netlistmgr.h's CLSID_NetworkListManager and IID_INetworkCostManager, here
 * so that no import library must define them. */
static const GUID network_list_manager = {0xdcb00c01, 0x570f, 0x4a9b, {0x8d, 0x69, 0x19, 0x9f, 0xdb, 0xa5, 0x72, 0x3b}};
static const GUID network_cost_manager = {0xdcb00008, 0x570f, 0x4a9b, {0x8d, 0x69, 0x19, 0x9f, 0xdb, 0xa5, 0x72, 0x3b}};

bool platform_network_metered(char *detail, size_t size)
{
    HRESULT init = CoInitializeEx(NULL, COINIT_MULTITHREADED);
    INetworkCostManager *manager = NULL;
    DWORD cost = NLM_CONNECTION_COST_UNKNOWN;
    HRESULT hr = CoCreateInstance(&network_list_manager, NULL, CLSCTX_ALL, &network_cost_manager, (void **)&manager);
    if (SUCCEEDED(hr)) {
        hr = INetworkCostManager_GetCost(manager, &cost, NULL);
        INetworkCostManager_Release(manager);
    }
    /* S_OK and S_FALSE are paired with an uninitialise; RPC_E_CHANGED_MODE
     * (the thread was set up otherwise) is not. */
    if (SUCCEEDED(init))
        CoUninitialize();
    if (FAILED(hr)) {
        snprintf(detail, size, "the network list manager did not answer (0x%08lx): not metered", (unsigned long)hr);
        return false;
    }
    return platform_cost_metered((uint32_t)cost, detail, size);
}
