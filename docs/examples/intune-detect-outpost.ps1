<#
.SYNOPSIS
  Intune (Win32 app) or SCCM detection script for the sensor outpost deploys.

.DESCRIPTION
  Reads the values outpost writes after every run under HKLM\SOFTWARE\outpost
  (README: "When machines update" and "Windows notes for administrators").
  Intune counts the app as detected when the script exits 0 AND writes
  something to stdout; it writes nothing when the app is not (yet) there, so
  Intune installs it or reports it as pending.

  Detected: the installed version is at least $MinimumVersion (and starts
  with the fleet's pin, when outpost has one), and the last deploy did not
  fail. A deploy waiting for its maintenance window, deferred on a metered
  connection or battery, or waiting for a reboot is reported on stderr,
  which Intune keeps in its log, and is not detected yet.

  Runs as SYSTEM in the 64-bit PowerShell (set "Run script as 32-bit process
  on 64-bit clients" to No): the values are in the 64-bit registry view.
#>
param(
    [string] $MinimumVersion = "26.1.0"
)

$ErrorActionPreference = "Stop"
$key = "HKLM:\SOFTWARE\outpost"

if (-not (Test-Path -Path $key)) {
    [Console]::Error.WriteLine("outpost has not run on this machine yet")
    exit 0
}
$values = Get-ItemProperty -Path $key

function Get-Value([string] $Name) {
    if ($values.PSObject.Properties.Name -contains $Name) { return $values.$Name }
    return $null
}

$installed = Get-Value "InstalledVersion"
$state = Get-Value "DeployState"
$since = Get-Value "DeployStateSince"
$pin = Get-Value "TargetVersionPrefix"

switch ($state) {
    "waiting_for_window" {
        [Console]::Error.WriteLine("deploy waits for its maintenance window until $(Get-Value 'DeployWaitingUntil') (UTC)")
    }
    "deferred" {
        [Console]::Error.WriteLine("deploy deferred since $since`: $(Get-Value 'DeployDeferredReason')")
    }
    "reboot_required" {
        [Console]::Error.WriteLine("the deploy of $(Get-Value 'LastDeployVersion') needs a reboot (exit code $(Get-Value 'LastDeployExitCode'))")
    }
    "failed" {
        [Console]::Error.WriteLine("the deploy of $(Get-Value 'LastDeployVersion') failed at $(Get-Value 'LastDeployTime') (exit code $(Get-Value 'LastDeployExitCode'))")
        exit 0
    }
}

if (-not $installed) {
    exit 0
}
# outpost's versions are dotted numbers with an optional suffix (26.01.03.24329-0de7ab):
# compare the numbers.
$number = ($installed -split "[-+]")[0]
$parsed = $null
if (-not [version]::TryParse($number, [ref] $parsed) -or $parsed -lt [version] $MinimumVersion) {
    exit 0
}
if ($pin -and -not $installed.StartsWith($pin)) {
    [Console]::Error.WriteLine("installed $installed is outside the fleet's pin $pin")
    exit 0
}
if ($state -eq "reboot_required") {
    exit 0
}
Write-Output "outpost sensor $installed installed ($state)"
exit 0
