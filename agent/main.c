/* main.c — placeholder until the command line lands (being written now). */
#include <stdio.h>
int main(void)
{
    fprintf(stderr, "outpost: not implemented yet\n");
    return 1;
}
